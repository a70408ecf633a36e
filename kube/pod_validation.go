package kube

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePod validates a Pod's spec (its metadata is validated by the
// generic create and update paths); old is the stored pod on an update.
func validatePod(pod, old *corev1.Pod) field.ErrorList {
	var oldSpec *corev1.PodSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	return validatePodSpec(&pod.Spec, oldSpec, field.NewPath("spec"))
}

// validatePodSpec validates the parts of a pod spec skiff acts on, with
// kube-apiserver's messages; old is the stored spec on an update (nil on a
// create and for templates).
func validatePodSpec(spec, old *corev1.PodSpec, fld *field.Path) field.ErrorList {
	volumes, errs := validateVolumes(spec.Volumes, fld.Child("volumes"))
	names := map[string]bool{}
	errs = append(errs, validateContainers(spec.InitContainers, volumes, fld.Child("initContainers"), names)...)
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(fld.Child("containers"), ""))
	}
	errs = append(errs, validateContainers(spec.Containers, volumes, fld.Child("containers"), names)...)
	errs = append(errs, supported(fld.Child("restartPolicy"), string(spec.RestartPolicy),
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	errs = append(errs, supported(fld.Child("dnsPolicy"), string(spec.DNSPolicy),
		corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone)...)
	errs = append(errs, validateImagePullSecrets(spec.ImagePullSecrets, fld.Child("imagePullSecrets"))...)
	if sc := spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
		errs = append(errs, validateSysctls(spec, old, fld.Child("securityContext", "sysctls"))...)
	}
	if d := spec.ActiveDeadlineSeconds; d != nil && *d < 1 {
		errs = append(errs, field.Invalid(fld.Child("activeDeadlineSeconds"), *d, "must be between 1 and 2147483647, inclusive"))
	}
	if name := spec.RuntimeClassName; name != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*name, false) {
			errs = append(errs, field.Invalid(fld.Child("runtimeClassName"), *name, msg))
		}
	}
	if len(spec.Overhead) > 0 {
		errs = append(errs, validateOverhead(spec.Overhead, fld.Child("overhead"))...)
	}
	return errs
}

// validateContainers validates containers whose names must be unique
// across the pod (names collects them) and whose mounts name the pod's
// volumes.
func validateContainers(cs []corev1.Container, volumes map[string]bool, fld *field.Path, names map[string]bool) field.ErrorList {
	var errs field.ErrorList
	for i := range cs {
		c := &cs[i]
		p := fld.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case names[c.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
		}
		names[c.Name] = true
		if c.Image == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
		errs = append(errs, supported(p.Child("imagePullPolicy"), string(c.ImagePullPolicy),
			corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
		errs = append(errs, supported(p.Child("terminationMessagePolicy"), string(c.TerminationMessagePolicy),
			corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError)...)
		errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, p.Child("volumeMounts"))...)
		errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
		errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	}
	return errs
}

// supported is Required for an empty value and NotSupported for a value
// outside valid.
func supported[T ~string](fld *field.Path, value string, valid ...T) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	list := make([]string, len(valid))
	for i, v := range valid {
		if string(v) == value {
			return nil
		}
		list[i] = string(v)
	}
	return field.ErrorList{field.NotSupported(fld, value, list)}
}

// ValidatePodCreate validates a new Pod: as any pod, and without ephemeral
// containers, which only the subresource adds.
func ValidatePodCreate(pod *corev1.Pod) field.ErrorList {
	errs := validatePod(pod, nil)
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "ephemeralContainers"), "cannot be set on create"))
	}
	return errs
}
