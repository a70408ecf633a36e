package api

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/gorilla/mux"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
)

// The ephemeralcontainers subresource of a Pod: GET returns the Pod; PUT
// and PATCH take a Pod of which only spec.ephemeralContainers counts.

// putEphemeralContainers serves PUT .../pods/{name}/ephemeralcontainers.
func (s *server) putEphemeralContainers(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	obj, err := decodeBody(w, r, podResource)
	if err == nil {
		err = checkNamespace(obj, v["namespace"])
	}
	if err == nil && obj.GetName() != v["name"] {
		err = apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), v["name"]))
	}
	dryRun, derr := isDryRun(r)
	if err == nil {
		err = derr
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, err := s.updateEphemeralContainers(v["namespace"], v["name"], dryRun, func(db.Object) (db.Object, error) {
		return obj, nil
	})
	if err != nil {
		writeError(w, r, statusFor(err, podResource.groupResource(), v["name"]))
		return
	}
	s.respond(w, r, podResource, http.StatusOK, out)
}

// patchEphemeralContainers serves PATCH .../pods/{name}/ephemeralcontainers
// (kubectl debug sends a strategic merge patch).
func (s *server) patchEphemeralContainers(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	pt := types.PatchType(mediaType(r))
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	default:
		writeError(w, r, unsupportedPatchType(string(pt)))
		return
	}
	directive, err := validationDirective(r)
	var body []byte
	if err == nil {
		body, err = readBody(r)
	}
	dryRun, derr := isDryRun(r)
	if err == nil {
		err = derr
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, err := s.updateEphemeralContainers(v["namespace"], v["name"], dryRun, func(old db.Object) (db.Object, error) {
		return applyPatch(w, podResource, pt, body, old, directive)
	})
	if err != nil {
		writeError(w, r, statusFor(err, podResource.groupResource(), v["name"]))
		return
	}
	s.respond(w, r, podResource, http.StatusOK, out)
}

// updateEphemeralContainers stores the ephemeral containers of what change
// makes of the stored pod, in one transaction; everything else stays.
// NOTE: kube-apiserver's podEphemeralContainersStrategy: the rest of the
// object is taken from the stored pod, preconditions (resourceVersion, uid)
// apply, the generation moves with the spec.
func (s *server) updateEphemeralContainers(ns, name string, dryRun bool, change func(old db.Object) (db.Object, error)) (db.Object, error) {
	var out db.Object
	err := s.store.Write(func(tx *db.Tx) error {
		stored, err := tx.Get(db.Pods, ns, name)
		if err != nil {
			return err
		}
		changed, err := change(stored.DeepCopyObject().(db.Object))
		if err != nil {
			return err
		}
		old := stored.(*corev1.Pod)
		if err := checkUpdatePreconditions(changed, old); err != nil {
			return err
		}
		pod := old.DeepCopy()
		pod.Spec.EphemeralContainers = changed.(*corev1.Pod).Spec.EphemeralContainers
		for i := range pod.Spec.EphemeralContainers {
			defaultContainer((*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
		}
		if errs := validateEphemeralContainersUpdate(&pod.Spec, &old.Spec); len(errs) > 0 {
			return apierrors.NewInvalid(podResource.groupKind(), name, errs)
		}
		out = pod
		if equality.Semantic.DeepEqual(pod.Spec, old.Spec) || dryRun {
			return nil
		}
		pod.Generation = old.Generation + 1
		return tx.Update(db.Pods, pod)
	})
	return out, err
}

// checkUpdatePreconditions: a resourceVersion or uid in the request must be the
// stored object's.
func checkUpdatePreconditions(obj db.Object, old *corev1.Pod) error {
	if rv := obj.GetResourceVersion(); rv != "" && rv != old.ResourceVersion {
		return db.ErrConflict
	}
	if uid := obj.GetUID(); uid != "" && uid != old.UID {
		return apierrors.NewConflict(podResource.groupResource(), old.Name, fmt.Errorf(
			"Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, old.UID))
	}
	return nil
}

// validatePodCreate validates a new Pod: as any pod, and without ephemeral
// containers, which only the subresource adds.
func validatePodCreate(obj db.Object) field.ErrorList {
	pod := obj.(*corev1.Pod)
	errs := validatePod(pod)
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create"))
	}
	return errs
}

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

// validateEphemeralContainersUpdate validates spec's ephemeral containers
// against the pod's old spec.
// NOTE: kube-apiserver's ValidatePodEphemeralContainersUpdate: existing
// ephemeral containers may be neither removed nor changed; each one is a
// valid container, named uniquely in the pod, targeting a regular or init
// container, with only the allowed fields and no subPath.
func validateEphemeralContainersUpdate(spec, old *corev1.PodSpec) field.ErrorList {
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
