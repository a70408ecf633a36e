package kube

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// DefaultMaxPods is the pods a node takes by default (the kubelet's
// --max-pods): its pods capacity.
const DefaultMaxPods = 110

// Allocatable is what a node offers to pods: its capacity less what is
// reserved for the system, resource by resource, never below zero (the
// kubelet's node status setter). A reservation of a resource the capacity
// does not list is ignored.
func Allocatable(capacity, reserved corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range capacity {
		left := q.DeepCopy()
		if r, ok := reserved[name]; ok {
			left.Sub(r)
		}
		if left.Sign() < 0 {
			left.Set(0)
		}
		out[name] = left
	}
	return out
}

// PrepareNodeForUpdate keeps the status on an update of a Node.
func PrepareNodeForUpdate(node, old *corev1.Node) { node.Status = old.Status }

// PrepareNodeForStatusUpdate keeps the spec on an update of a Node's
// status.
func PrepareNodeForStatusUpdate(node, old *corev1.Node) { node.Spec = old.Spec }

// PrepareNodeForCreate is kube's node strategy on create: a Node is
// stored with the status its creator gives (the kubelet registers its node
// with one), less the fields of the retired dynamic kubelet configuration
// and of the gates off in v1.34 (runtime handlers, features).
func PrepareNodeForCreate(node *corev1.Node) {
	node.Spec.ConfigSource = nil
	node.Status.Config = nil
	node.Status.RuntimeHandlers = nil
	node.Status.Features = nil
}

// ValidateNode is kube's ValidateNode beyond the metadata: the taints (a
// qualified key, a label value, one of the three effects, unique by key
// and effect) and the pod CIDRs (valid, at most one per IP family).
//
// NOTE: kube reports taints under metadata.taints, not spec.taints; so
// does skiff, for clients that match the message.
func ValidateNode(node *corev1.Node) field.ErrorList {
	errs := validateNodeTaints(node.Spec.Taints, field.NewPath("metadata", "taints"))
	if cidrs := node.Spec.PodCIDRs; len(cidrs) > 0 {
		fld := field.NewPath("spec", "podCIDRs")
		for i, cidr := range cidrs {
			// NOTE: not strict: StrictIPCIDRValidation is Alpha in v1.34.
			errs = append(errs, validation.IsValidCIDRForLegacyField(fld.Index(i), cidr, false, nil)...)
		}
		if len(errs) == 0 && len(cidrs) > 1 {
			if dual, err := netutils.IsDualStackCIDRStrings(cidrs); err != nil || !dual || len(cidrs) > 2 {
				errs = append(errs, field.Invalid(fld, cidrs, "may specify no more than one CIDR for each IP family"))
			}
		}
	}
	return errs
}

// ValidateNodeUpdate is kube's ValidateNodeUpdate beyond the metadata: the
// node as on create, no address twice, and podCIDRs and providerID fixed
// once set.
func ValidateNodeUpdate(node, old *corev1.Node) field.ErrorList {
	errs := ValidateNode(node)
	seen := map[corev1.NodeAddress]bool{}
	for i, a := range node.Status.Addresses {
		if seen[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		seen[a] = true
	}
	if len(old.Spec.PodCIDRs) > 0 && !slices.Equal(old.Spec.PodCIDRs, node.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), `node updates may not change podCIDR except from "" to valid`))
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != node.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), `node updates may not change providerID except from "" to valid`))
	}
	if node.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return errs
}

// validateNodeTaints is kube's validateNodeTaints.
func validateNodeTaints(taints []corev1.Taint, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[corev1.TaintEffect]map[string]bool{}
	for i, taint := range taints {
		at := fld.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(taint.Key, at.Child("key"))...)
		if msgs := validation.IsValidLabelValue(taint.Value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(at.Child("value"), taint.Value, strings.Join(msgs, ";")))
		}
		errs = append(errs, validateTaintEffect(taint.Effect, at.Child("effect"))...)
		if seen[taint.Effect][taint.Key] {
			dup := field.Duplicate(at, taint)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
			continue
		}
		if seen[taint.Effect] == nil {
			seen[taint.Effect] = map[string]bool{}
		}
		seen[taint.Effect][taint.Key] = true
	}
	return errs
}

// validateTaintEffect: a taint's effect is required and one of three.
func validateTaintEffect(effect corev1.TaintEffect, fld *field.Path) field.ErrorList {
	switch effect {
	case "":
		return field.ErrorList{field.Required(fld, "")}
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return field.ErrorList{field.NotSupported(fld, effect, []corev1.TaintEffect{
		corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute})}
}
