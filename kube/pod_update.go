package kube

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields are the spec fields a Pod update may change, as
// kube-apiserver lists them in its refusal.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// ValidatePodUpdate validates an update of a Pod (not of its status) with
// kube-apiserver's rules on a running Pod's spec: container and init
// container images may change; activeDeadlineSeconds may be set or
// lowered; tolerations may only be added (or have their tolerationSeconds
// changed); schedulingGates may only be removed; terminationGracePeriodSeconds
// may go from negative to 1. Any other change is refused with kube's
// message, followed by a diff of the spec.
// NOTE: the order and the early returns are those of kube's
// ValidatePodUpdate (pkg/apis/core/validation), so a client sees the same
// first error.
func ValidatePodUpdate(n, o *corev1.Pod) field.ErrorList {
	errs := validatePod(n, o)
	spec := field.NewPath("spec")
	cerrs, stop := validateContainerUpdates(n.Spec.Containers, o.Spec.Containers, spec.Child("containers"))
	if errs = append(errs, cerrs...); stop {
		return errs
	}
	cerrs, stop = validateContainerUpdates(n.Spec.InitContainers, o.Spec.InitContainers, spec.Child("initContainers"))
	if errs = append(errs, cerrs...); stop {
		return errs
	}
	derrs, stop := validateDeadlineUpdate(n.Spec.ActiveDeadlineSeconds, o.Spec.ActiveDeadlineSeconds, spec.Child("activeDeadlineSeconds"))
	if errs = append(errs, derrs...); stop {
		return errs
	}
	errs = append(errs, validateOnlyAddedTolerations(n.Spec.Tolerations, o.Spec.Tolerations, spec.Child("tolerations"))...)
	errs = append(errs, validateOnlyDeletedSchedulingGates(n.Spec.SchedulingGates, o.Spec.SchedulingGates, spec.Child("schedulingGates"))...)
	if equality.Semantic.DeepEqual(n.Spec, o.Spec) {
		return errs
	}
	munged := mungeMutablePodSpec(&n.Spec, &o.Spec)
	if !equality.Semantic.DeepEqual(munged, &o.Spec) {
		errs = append(errs, field.Forbidden(spec, fmt.Sprintf("pod updates may not change fields other than %s\n%v",
			strings.Join(updatablePodSpecFields, ","), cmp.Diff(o.Spec, *munged))))
	}
	return errs
}

// validateContainerUpdates: an update may neither add nor remove
// containers (stop is then true: nothing else is worth checking).
func validateContainerUpdates(newCs, oldCs []corev1.Container, fld *field.Path) (errs field.ErrorList, stop bool) {
	if len(newCs) != len(oldCs) {
		return field.ErrorList{field.Forbidden(fld, "pod updates may not add or remove containers")}, true
	}
	for i, c := range newCs {
		// NOTE: an empty image is already Required by validatePod.
		if strings.TrimSpace(c.Image) != c.Image {
			errs = append(errs, field.Invalid(fld.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return errs, false
}

// validateDeadlineUpdate: activeDeadlineSeconds may be set where it was
// not, or lowered, never raised nor removed.
func validateDeadlineUpdate(newD, oldD *int64, fld *field.Path) (errs field.ErrorList, stop bool) {
	switch {
	case newD == nil && oldD != nil:
		return field.ErrorList{field.Invalid(fld, newD, "must not update from a positive integer to nil value")}, false
	case newD == nil:
		return nil, false
	case *newD < 0 || *newD > math.MaxInt32:
		return field.ErrorList{field.Invalid(fld, *newD, validation.InclusiveRangeError(0, math.MaxInt32))}, true
	case oldD != nil && *oldD < *newD:
		return field.ErrorList{field.Invalid(fld, *newD, "must be less than or equal to previous value")}, true
	}
	return nil, false
}

// validateOnlyAddedTolerations: every old toleration must still be there,
// changed at most in its tolerationSeconds.
func validateOnlyAddedTolerations(newTs, oldTs []corev1.Toleration, fld *field.Path) field.ErrorList {
	for _, o := range oldTs {
		o.TolerationSeconds = nil
		found := false
		for _, n := range newTs {
			n.TolerationSeconds = nil
			if reflect.DeepEqual(o, n) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fld, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return nil
}

// validateOnlyDeletedSchedulingGates: gates may be removed, never added.
func validateOnlyDeletedSchedulingGates(newGs, oldGs []corev1.PodSchedulingGate, fld *field.Path) field.ErrorList {
	old := map[string]bool{}
	for _, g := range oldGs {
		old[g.Name] = true
	}
	var errs field.ErrorList
	for i, g := range newGs {
		if !old[g.Name] {
			errs = append(errs, field.Forbidden(fld.Index(i).Child("name"),
				fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// mungeMutablePodSpec is the new spec with every field an update may change
// put back to its old value: what is left to differ is forbidden.
func mungeMutablePodSpec(newSpec, oldSpec *corev1.PodSpec) *corev1.PodSpec {
	m := newSpec.DeepCopy()
	for i := range m.Containers {
		m.Containers[i].Image = oldSpec.Containers[i].Image
	}
	for i := range m.InitContainers {
		m.InitContainers[i].Image = oldSpec.InitContainers[i].Image
	}
	m.ActiveDeadlineSeconds = oldSpec.ActiveDeadlineSeconds
	m.SchedulingGates = oldSpec.SchedulingGates
	m.Tolerations = oldSpec.Tolerations
	if g := oldSpec.TerminationGracePeriodSeconds; g != nil && *g < 0 &&
		m.TerminationGracePeriodSeconds != nil && *m.TerminationGracePeriodSeconds == 1 {
		m.TerminationGracePeriodSeconds = g
	}
	return m
}
