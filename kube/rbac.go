package kube

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateRBACName is kube's name rule of RBAC objects: any path segment
// (so "system:basic-user" is a name).
func ValidateRBACName(name string, _ bool) []string { return path.IsValidPathSegmentName(name) }

// DefaultRoleBinding fills what rbac/v1 defaulting fills on a RoleBinding.
func DefaultRoleBinding(b *rbacv1.RoleBinding) { defaultBinding(&b.RoleRef, b.Subjects) }

// DefaultClusterRoleBinding fills what rbac/v1 defaulting fills on a
// ClusterRoleBinding.
func DefaultClusterRoleBinding(b *rbacv1.ClusterRoleBinding) { defaultBinding(&b.RoleRef, b.Subjects) }

// defaultBinding: the roleRef's apiGroup and a User or Group subject's are
// RBAC's; a ServiceAccount's is the core group.
func defaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		if subjects[i].APIGroup == "" && (subjects[i].Kind == rbacv1.UserKind || subjects[i].Kind == rbacv1.GroupKind) {
			subjects[i].APIGroup = rbacv1.GroupName
		}
	}
}

// ValidateRole is kube's validation of a Role's rules. Unknown verbs and
// resources are valid: they grant nothing.
func ValidateRole(r *rbacv1.Role) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range r.Rules {
		errs = append(errs, validatePolicyRule(rule, true, field.NewPath("rules").Index(i))...)
	}
	return errs
}

// ValidateRoleUpdate validates an update of a Role.
func ValidateRoleUpdate(r, _ *rbacv1.Role) field.ErrorList { return ValidateRole(r) }

// ValidateClusterRole is kube's validation of a ClusterRole's rules and
// aggregationRule.
func ValidateClusterRole(r *rbacv1.ClusterRole) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range r.Rules {
		errs = append(errs, validatePolicyRule(rule, false, field.NewPath("rules").Index(i))...)
	}
	if r.AggregationRule == nil {
		return errs
	}
	selectors := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(r.AggregationRule.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(selectors, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	for i := range r.AggregationRule.ClusterRoleSelectors {
		sel := &r.AggregationRule.ClusterRoleSelectors[i]
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, selectors.Index(i))...)
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			errs = append(errs, field.Invalid(selectors.Index(i), sel, "invalid label selector."))
		}
	}
	return errs
}

// ValidateClusterRoleUpdate validates an update of a ClusterRole.
func ValidateClusterRoleUpdate(r, _ *rbacv1.ClusterRole) field.ErrorList {
	return ValidateClusterRole(r)
}

// validatePolicyRule: verbs always; non-resource URLs only in cluster
// roles and never with resources; otherwise groups and resources.
func validatePolicyRule(rule rbacv1.PolicyRule, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Verbs) == 0 {
		errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
	}
	if len(rule.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(rule.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(rule.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// ValidateRoleBinding is kube's validation of a RoleBinding.
func ValidateRoleBinding(b *rbacv1.RoleBinding) field.ErrorList {
	return validateBinding(b.RoleRef, b.Subjects, true)
}

// ValidateRoleBindingUpdate: a RoleBinding's roleRef never changes.
func ValidateRoleBindingUpdate(b, old *rbacv1.RoleBinding) field.ErrorList {
	return append(ValidateRoleBinding(b), validateRoleRefUpdate(b.RoleRef, old.RoleRef)...)
}

// ValidateClusterRoleBinding is kube's validation of a ClusterRoleBinding.
func ValidateClusterRoleBinding(b *rbacv1.ClusterRoleBinding) field.ErrorList {
	return validateBinding(b.RoleRef, b.Subjects, false)
}

// ValidateClusterRoleBindingUpdate: a ClusterRoleBinding's roleRef never
// changes.
func ValidateClusterRoleBindingUpdate(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
	return append(ValidateClusterRoleBinding(b), validateRoleRefUpdate(b.RoleRef, old.RoleRef)...)
}

func validateRoleRefUpdate(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref != old {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
	}
	return nil
}

// validateBinding checks a binding's roleRef (a ClusterRoleBinding refers
// to ClusterRoles only) and subjects.
func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if ref.Kind != "ClusterRole" && (!namespaced || ref.Kind != "Role") {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"), ""))
	}
	for _, msg := range ValidateRBACName(ref.Name, false) {
		if ref.Name != "" {
			errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}
