package kube

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	clusterIPsPath     = field.NewPath("spec", "clusterIPs")
	ipFamiliesPath     = field.NewPath("spec", "ipFamilies")
	ipFamilyPolicyPath = field.NewPath("spec", "ipFamilyPolicy")
)

// validateClusterIPFields is kube's ValidateServiceClusterIPsRelatedFields:
// clusterIP and clusterIPs agree, the families and the policy are known
// values, the IPs are IPs (or a lone None), at most one per family.
func validateClusterIPFields(svc, old *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	switch {
	case spec.ClusterIP != "" && len(spec.ClusterIPs) == 0:
		errs = append(errs, field.Required(clusterIPsPath, ""))
	case spec.ClusterIP != "" && spec.ClusterIPs[0] != spec.ClusterIP:
		errs = append(errs, field.Invalid(clusterIPsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
	case spec.ClusterIP == "" && len(spec.ClusterIPs) != 0:
		errs = append(errs, field.Invalid(clusterIPsPath, spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	seen := map[corev1.IPFamily]bool{}
	for i, fam := range spec.IPFamilies {
		if !slices.Contains(ipFamilies, fam) {
			errs = append(errs, field.NotSupported(ipFamiliesPath.Index(i), fam, []string{string(corev1.IPv4Protocol), string(corev1.IPv6Protocol)}))
		}
		if seen[fam] {
			errs = append(errs, field.Duplicate(ipFamiliesPath.Index(i), fam))
		}
		seen[fam] = true
	}
	if p := spec.IPFamilyPolicy; p != nil && !slices.Contains(ipFamilyPolicies, *p) {
		errs = append(errs, field.NotSupported(ipFamilyPolicyPath, p, []string{string(corev1.IPFamilyPolicyPreferDualStack),
			string(corev1.IPFamilyPolicyRequireDualStack), string(corev1.IPFamilyPolicySingleStack)}))
	}
	var oldIPs []string
	if old != nil {
		oldIPs = old.Spec.ClusterIPs
	}
	invalid := false
	for i, ip := range spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(spec.ClusterIPs) > 1 {
				invalid = true
				errs = append(errs, field.Invalid(clusterIPsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		ipErrs := validation.IsValidIPForLegacyField(clusterIPsPath.Index(i), ip, false, oldIPs)
		invalid = invalid || len(ipErrs) > 0
		errs = append(errs, ipErrs...)
	}
	if len(spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(clusterIPsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	if invalid {
		return errs
	}
	if len(spec.ClusterIPs) == 2 && familyOf(spec.ClusterIPs[0]) == familyOf(spec.ClusterIPs[1]) {
		errs = append(errs, field.Invalid(clusterIPsPath, spec.ClusterIPs, "may specify no more than one IP for each IP family"))
	}
	if !isHeadless(svc) {
		for i, ip := range spec.ClusterIPs {
			if i >= len(spec.IPFamilies) {
				break
			}
			if fam := familyOf(ip); fam != spec.IPFamilies[i] && slices.Contains(ipFamilies, spec.IPFamilies[i]) {
				errs = append(errs, field.Invalid(clusterIPsPath.Index(i), ip,
					fmt.Sprintf("expected an %s value as indicated by `ipFamilies[%d]`", spec.IPFamilies[i], i)))
			}
		}
	}
	return errs
}

// validateServiceFamilies is the checking half of kube's
// initIPFamilyFields on a single-stack IPv4 cluster: the linked fields
// first (alone), then what this cluster cannot give.
func validateServiceFamilies(svc, old *corev1.Service) field.ErrorList {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName || spec.IPFamilyPolicy == nil {
		return nil
	}
	if errs := validateClusterIPFields(svc, old); len(errs) > 0 {
		return errs
	}
	var errs field.ErrorList
	policy := *spec.IPFamilyPolicy
	if old != nil && policy != corev1.IPFamilyPolicySingleStack {
		if len(spec.ClusterIPs) > 0 && len(spec.ClusterIPs) < len(old.Spec.ClusterIPs) {
			errs = append(errs, field.Invalid(ipFamilyPolicyPath, spec.IPFamilyPolicy, "must be 'SingleStack' to release the secondary cluster IP"))
		}
		if len(spec.IPFamilies) > 0 && len(spec.IPFamilies) < len(old.Spec.IPFamilies) {
			errs = append(errs, field.Invalid(ipFamilyPolicyPath, spec.IPFamilyPolicy, "must be 'SingleStack' to release the secondary IP family"))
		}
	}
	if policy == corev1.IPFamilyPolicySingleStack {
		if len(spec.ClusterIPs) == 2 {
			errs = append(errs, field.Invalid(ipFamilyPolicyPath, spec.IPFamilyPolicy,
				"must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
		}
		if len(spec.IPFamilies) == 2 {
			errs = append(errs, field.Invalid(ipFamilyPolicyPath, spec.IPFamilyPolicy,
				"must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
		}
	}
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		if fam := familyOf(ip); fam != corev1.IPv4Protocol && i >= len(spec.IPFamilies) {
			errs = append(errs, field.Invalid(clusterIPsPath.Index(i), spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", fam)))
		}
	}
	if len(errs) > 0 || (spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0) {
		return errs
	}
	if policy == corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(ipFamilyPolicyPath, spec.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, fam := range spec.IPFamilies {
		if fam != corev1.IPv4Protocol {
			errs = append(errs, field.Invalid(ipFamiliesPath.Index(i), fam, "not configured on this cluster"))
		}
	}
	return errs
}

// validateClusterIPsUpdate is kube's validateUpgradeDowngradeClusterIPs:
// the primary clusterIP never changes (headless stays headless).
func validateClusterIPsUpdate(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if isHeadless(svc) && isHeadless(old) {
		return nil
	}
	newIPs, oldIPs := svc.Spec.ClusterIPs, old.Spec.ClusterIPs
	var errs field.ErrorList
	switch {
	case len(oldIPs) == len(newIPs):
		for i := range oldIPs {
			if oldIPs[i] != newIPs[i] {
				errs = append(errs, field.Invalid(clusterIPsPath.Index(i), newIPs, "may not change once set"))
			}
		}
	case len(oldIPs) > len(newIPs):
		if len(newIPs) == 0 {
			errs = append(errs, field.Invalid(clusterIPsPath.Index(0), newIPs, "primary clusterIP can not be unset"))
		}
		if len(oldIPs) > 0 && len(newIPs) > 0 && newIPs[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(clusterIPsPath.Index(0), newIPs, "may not change once set"))
		}
		if p := svc.Spec.IPFamilyPolicy; len(newIPs) == 1 && (p == nil || *p != corev1.IPFamilyPolicySingleStack) {
			errs = append(errs, field.Invalid(ipFamilyPolicyPath, p, "must be set to 'SingleStack' when releasing the secondary clusterIP"))
		}
	default:
		if len(oldIPs) > 0 && newIPs[0] != oldIPs[0] {
			errs = append(errs, field.Invalid(clusterIPsPath.Index(0), newIPs, "may not change once set"))
		}
	}
	return errs
}

// validateIPFamiliesUpdate is kube's validateUpgradeDowngradeIPFamilies:
// the primary family never changes (headless Services may change theirs).
func validateIPFamiliesUpdate(svc, old *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName ||
		isHeadless(svc) || isHeadless(old) {
		return nil
	}
	newFams, oldFams := svc.Spec.IPFamilies, old.Spec.IPFamilies
	var errs field.ErrorList
	switch {
	case len(oldFams) == len(newFams):
		for i := range oldFams {
			if oldFams[i] != newFams[i] {
				errs = append(errs, field.Invalid(ipFamiliesPath.Index(0), newFams, "may not change once set"))
			}
		}
	case len(oldFams) > len(newFams):
		if len(svc.Spec.ClusterIPs) == 0 {
			errs = append(errs, field.Invalid(ipFamiliesPath.Index(0), newFams, "primary ipFamily can not be unset"))
		}
		if len(newFams) > 0 && newFams[0] != oldFams[0] {
			errs = append(errs, field.Invalid(ipFamiliesPath.Index(0), svc.Spec.ClusterIPs, "may not change once set"))
		}
		if p := svc.Spec.IPFamilyPolicy; len(newFams) == 1 && (p == nil || *p != corev1.IPFamilyPolicySingleStack) {
			errs = append(errs, field.Invalid(ipFamilyPolicyPath, p, "must be set to 'SingleStack' when releasing the secondary ipFamily"))
		}
	default:
		if len(oldFams) > 0 && len(newFams) > 0 && newFams[0] != oldFams[0] {
			errs = append(errs, field.Invalid(ipFamiliesPath.Index(0), svc.Spec.ClusterIPs, "may not change once set"))
		}
	}
	return errs
}
