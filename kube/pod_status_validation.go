package kube

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"
)

// ValidatePodStatusUpdate is kube's ValidatePodStatusUpdate for the fields
// skiff's pods carry: custom condition types, observedGenerations,
// nominatedNodeName, an immutable qosClass, containers that may not leave
// the terminated state unless the restart policy restarts them, and valid
// pod and host IPs.
//
// NOTE: skiff's own kubelet writes pod status through the store, not
// through this path; these rules bound what API clients may write.
func ValidatePodStatusUpdate(n, o *corev1.Pod) field.ErrorList {
	fld := field.NewPath("status")
	errs := validatePodConditions(n.Status.Conditions, fld.Child("conditions"))
	if nn := n.Status.NominatedNodeName; nn != o.Status.NominatedNodeName && nn != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(nn, false) {
			errs = append(errs, field.Invalid(fld.Child("nominatedNodeName"), nn, msg))
		}
	}
	if n.Status.ObservedGeneration < 0 {
		errs = append(errs, field.Invalid(fld.Child("observedGeneration"), n.Status.ObservedGeneration, "must be a non-negative integer"))
	}
	errs = append(errs, validateImmutable(n.Status.QOSClass, o.Status.QOSClass, fld.Child("qosClass"))...)
	policy := n.Spec.RestartPolicy
	errs = append(errs, validateStateTransitions(n.Status.ContainerStatuses, o.Status.ContainerStatuses, fld.Child("containerStatuses"),
		func(name string, code int32) bool { return restartPolicyRestarts(policy, code) })...)
	errs = append(errs, validateStateTransitions(n.Status.InitContainerStatuses, o.Status.InitContainerStatuses, fld.Child("initContainerStatuses"),
		func(name string, code int32) bool {
			_, kind := FindContainer(&n.Spec, name)
			return restartPolicyRestarts(policy, code) || kind == SidecarContainer
		})...)
	errs = append(errs, validateStateTransitions(n.Status.EphemeralContainerStatuses, o.Status.EphemeralContainerStatuses, fld.Child("ephemeralContainerStatuses"),
		func(string, int32) bool { return false })...)
	errs = append(errs, validateStatusIPs(podIPStrings(n.Status.PodIPs), podIPStrings(o.Status.PodIPs), n.Status.PodIPs, fld.Child("podIPs"))...)
	if len(n.Status.HostIPs) > 0 && n.Status.HostIP != n.Status.HostIPs[0].IP {
		errs = append(errs, field.Invalid(fld.Child("hostIPs").Index(0).Child("ip"), n.Status.HostIPs[0].IP, "must be equal to `hostIP`"))
	}
	return append(errs, validateStatusIPs(hostIPStrings(n.Status.HostIPs), hostIPStrings(o.Status.HostIPs), n.Status.HostIPs, fld.Child("hostIPs"))...)
}

// validatePodConditions: observedGeneration is non-negative, and a
// condition kube does not define itself has a qualified-name type.
func validatePodConditions(conds []corev1.PodCondition, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	system := []corev1.PodConditionType{corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized}
	for i, c := range conds {
		if c.ObservedGeneration < 0 {
			errs = append(errs, field.Invalid(fld.Index(i).Child("observedGeneration"), c.ObservedGeneration, "must be a non-negative integer"))
		}
		if slices.Contains(system, c.Type) {
			continue
		}
		// NOTE: kube's path says "Type", capitalized.
		for _, msg := range validation.IsQualifiedName(string(c.Type)) {
			errs = append(errs, field.Invalid(fld.Index(i).Child("Type"), string(c.Type), msg))
		}
	}
	return errs
}

// validateStateTransitions refuses a container status that leaves the
// terminated state when restarts(name, exitCode) says it may not restart.
func validateStateTransitions(statuses, old []corev1.ContainerStatus, fld *field.Path, restarts func(name string, code int32) bool) field.ErrorList {
	var errs field.ErrorList
	for i, o := range old {
		if o.State.Terminated == nil || restarts(o.Name, o.State.Terminated.ExitCode) {
			continue
		}
		for _, s := range statuses {
			if s.Name == o.Name && s.State.Terminated == nil {
				errs = append(errs, field.Forbidden(fld.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}

// validateStatusIPs: every new IP parses (those already stored are kept as
// they are), and two at most, one of each family; list is the field's
// value, for the message.
func validateStatusIPs(ips, old []string, list any, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ip := range ips {
		errs = append(errs, validation.IsValidIPForLegacyField(fld.Index(i), ip, false, old)...)
	}
	if len(ips) > 1 {
		if dual, err := netutils.IsDualStackIPStrings(ips); err != nil || !dual || len(ips) > 2 {
			errs = append(errs, field.Invalid(fld, kubeValue(list), "may specify no more than one IP for each IP family"))
		}
	}
	return errs
}

func podIPStrings(ips []corev1.PodIP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.IP
	}
	return out
}

func hostIPStrings(ips []corev1.HostIP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.IP
	}
	return out
}
