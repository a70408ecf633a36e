package kube

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// allowedEphemeralFields are the Container fields an ephemeral container
// may set.
// NOTE: kube-apiserver's allow-list: ports, resources, probes, lifecycle
// and restart policies are what a pod's own containers are for.
var allowedEphemeralFields = map[string]bool{
	"Name": true, "Image": true, "Command": true, "Args": true, "WorkingDir": true,
	"EnvFrom": true, "Env": true, "VolumeMounts": true, "VolumeDevices": true,
	"TerminationMessagePath": true, "TerminationMessagePolicy": true,
	"ImagePullPolicy": true, "SecurityContext": true, "Stdin": true, "StdinOnce": true, "TTY": true,
}

// ValidateEphemeralContainersUpdate validates spec's ephemeral containers
// against the pod's old spec.
// NOTE: kube-apiserver's ValidatePodEphemeralContainersUpdate: existing
// ephemeral containers may be neither removed nor changed; each one is a
// valid container, named uniquely in the pod, targeting a regular or init
// container, with only the allowed fields and no subPath.
func ValidateEphemeralContainersUpdate(spec, old *corev1.PodSpec) field.ErrorList {
	fld := field.NewPath("spec", "ephemeralContainers")
	var errs field.ErrorList
	byName := map[string]*corev1.EphemeralContainer{}
	for i := range spec.EphemeralContainers {
		byName[spec.EphemeralContainers[i].Name] = &spec.EphemeralContainers[i]
	}
	for _, o := range old.EphemeralContainers {
		n, ok := byName[o.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(fld, fmt.Sprintf("existing ephemeral containers %q may not be removed", o.Name)))
		case !equality.Semantic.DeepEqual(o, *n):
			errs = append(errs, field.Forbidden(fld, fmt.Sprintf("existing ephemeral containers %q may not be changed", o.Name)))
		}
	}
	return append(errs, validateEphemeralContainers(spec, fld)...)
}

// validateEphemeralContainers validates each ephemeral container of spec.
func validateEphemeralContainers(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	names, targets := map[string]bool{}, map[string]bool{}
	for _, list := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			names[c.Name], targets[c.Name] = true, true
		}
	}
	volumes, _ := validateVolumes(spec.Volumes, field.NewPath("spec", "volumes"))
	common := make([]corev1.Container, len(spec.EphemeralContainers))
	for i := range spec.EphemeralContainers {
		common[i] = corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
	}
	errs := validateContainers(common, volumes, fld, names)
	for i := range spec.EphemeralContainers {
		ec := &spec.EphemeralContainers[i]
		p := fld.Index(i)
		if ec.TargetContainerName != "" && !targets[ec.TargetContainerName] {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		errs = append(errs, forbiddenEphemeralFields(&common[i], p)...)
		for j, m := range ec.VolumeMounts {
			mp := p.Child("volumeMounts").Index(j)
			if m.SubPath != "" {
				errs = append(errs, field.Forbidden(mp.Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if m.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(mp.Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return errs
}

// forbiddenEphemeralFields reports every set Container field outside the
// allow-list, by its JSON name.
func forbiddenEphemeralFields(c *corev1.Container, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if allowedEphemeralFields[f.Name] || v.Field(i).IsZero() {
			continue
		}
		errs = append(errs, field.Forbidden(fld.Child(jsonName(f)), "cannot be set for an Ephemeral Container"))
	}
	return errs
}

// jsonName is a struct field's JSON key.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}
