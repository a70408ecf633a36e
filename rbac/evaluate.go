package rbac

import (
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// GroupMasters is the group kube-apiserver authorizes for everything
// before RBAC is asked (its privileged-group authorizer).
const GroupMasters = "system:masters"

// Attributes are what a request asks, as kube's authorizer.Attributes.
type Attributes struct {
	User authenticationv1.UserInfo
	Verb string
	// ResourceRequest: a request on an API resource, named by APIGroup,
	// Resource, Subresource, Namespace and Name; otherwise a non-resource
	// request on Path.
	ResourceRequest bool
	APIGroup        string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	Path            string
}

// Source gives the roles and bindings RBAC reads. Role and ClusterRole
// return an error naming the missing object (kube's NotFound message) when
// it does not exist.
type Source interface {
	ClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error)
	RoleBindings(namespace string) ([]*rbacv1.RoleBinding, error)
	ClusterRole(name string) (*rbacv1.ClusterRole, error)
	Role(namespace, name string) (*rbacv1.Role, error)
}

// Authorize reports whether the rules given to a.User allow a. reason,
// for a denial, names the roles that could not be resolved (kube's
// "RBAC: clusterrole.rbac.authorization.k8s.io \"x\" not found"), or is
// empty.
func Authorize(src Source, a Attributes) (allowed bool, reason string) {
	if slices.Contains(a.User.Groups, GroupMasters) {
		return true, ""
	}
	var errs []error
	visitRules(src, a.User, a.Namespace, func(by string, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
			return true
		}
		if RuleAllows(a, rule) {
			allowed, reason = true, "RBAC: allowed by "+by
		}
		return !allowed
	})
	if allowed || len(errs) == 0 {
		return allowed, reason
	}
	return false, "RBAC: " + aggregateMessage(errs)
}

// RulesFor returns every rule user holds in namespace ("" = the cluster
// scope only), with the errors of the bindings whose roles could not be
// resolved (the rules are then incomplete, not wrong).
func RulesFor(src Source, user authenticationv1.UserInfo, namespace string) ([]rbacv1.PolicyRule, []error) {
	var rules []rbacv1.PolicyRule
	var errs []error
	visitRules(src, user, namespace, func(_ string, rule *rbacv1.PolicyRule, err error) bool {
		if err != nil {
			errs = append(errs, err)
		} else {
			rules = append(rules, *rule)
		}
		return true
	})
	return rules, errs
}

// visitor is called with each rule and the binding that gives it (as
// kube describes it), or with an error; false stops the visit.
type visitor func(by string, rule *rbacv1.PolicyRule, err error) bool

// visitRules calls visit with each rule given to user by the
// ClusterRoleBindings, then by the RoleBindings of namespace, or with the
// error of a binding whose role could not be read.
func visitRules(src Source, user authenticationv1.UserInfo, namespace string, visit visitor) {
	crbs, err := src.ClusterRoleBindings()
	if err != nil && !visit("", nil, err) {
		return
	}
	for _, b := range crbs {
		i := subjectFor(user, b.Subjects, "")
		if i < 0 {
			continue
		}
		by := fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.Name, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(b.Subjects[i], ""))
		if !visitRef(src, b.RoleRef, "", by, visit) {
			return
		}
	}
	if namespace == "" {
		return
	}
	rbs, err := src.RoleBindings(namespace)
	if err != nil && !visit("", nil, err) {
		return
	}
	for _, b := range rbs {
		i := subjectFor(user, b.Subjects, namespace)
		if i < 0 {
			continue
		}
		by := fmt.Sprintf("RoleBinding %q of %s %q to %s", b.Name+"/"+b.Namespace, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(b.Subjects[i], namespace))
		if !visitRef(src, b.RoleRef, namespace, by, visit) {
			return
		}
	}
}

// describeSubject names a subject in an "allowed by" reason.
func describeSubject(s rbacv1.Subject, namespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		if s.Namespace != "" {
			namespace = s.Namespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+namespace)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

// visitRef visits the rules of the role ref names; false = stop.
func visitRef(src Source, ref rbacv1.RoleRef, namespace, by string, visit visitor) bool {
	rules, err := RoleRefRules(src, ref, namespace)
	if err != nil {
		return visit("", nil, err)
	}
	for i := range rules {
		if !visit(by, &rules[i], nil) {
			return false
		}
	}
	return true
}

// RoleRefRules are the rules of the role a binding in namespace refers to.
func RoleRefRules(src Source, ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		r, err := src.Role(namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	case "ClusterRole":
		r, err := src.ClusterRole(ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// subjectFor is the index of the first of subjects that names user, or
// -1; a ServiceAccount subject without a namespace is one of the binding's
// namespace.
func subjectFor(user authenticationv1.UserInfo, subjects []rbacv1.Subject, namespace string) int {
	for i, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == user.Username {
				return i
			}
		case rbacv1.GroupKind:
			if slices.Contains(user.Groups, s.Name) {
				return i
			}
		case rbacv1.ServiceAccountKind:
			ns := namespace
			if s.Namespace != "" {
				ns = s.Namespace
			}
			if ns != "" && user.Username == ServiceAccountUsername(ns, s.Name) {
				return i
			}
		}
	}
	return -1
}

// ServiceAccountUsername is the user name a ServiceAccount authenticates as.
func ServiceAccountUsername(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// RuleAllows reports whether rule allows the request a: its verb, and its
// API group, resource ("pods/log" with a subresource, or "*/log") and name
// for a resource request, or its path for a non-resource one.
func RuleAllows(a Attributes, rule *rbacv1.PolicyRule) bool {
	if !matchesAny(rule.Verbs, a.Verb, rbacv1.VerbAll) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(rule.NonResourceURLs, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	return matchesAny(rule.APIGroups, a.APIGroup, rbacv1.APIGroupAll) &&
		resourceMatches(rule.Resources, resource, a.Subresource) &&
		(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, a.Name))
}

// matchesAny: one of set is want or the wildcard.
func matchesAny(set []string, want, wildcard string) bool {
	for _, s := range set {
		if s == want || s == wildcard {
			return true
		}
	}
	return false
}

// resourceMatches: "*", the resource itself ("pods/log"), or "*/<sub>".
func resourceMatches(set []string, resource, subresource string) bool {
	for _, s := range set {
		if s == rbacv1.ResourceAll || s == resource {
			return true
		}
		if subresource != "" && s == "*/"+subresource {
			return true
		}
	}
	return false
}

// nonResourceURLMatches: "*", the path itself, or a prefix ending in "*".
func nonResourceURLMatches(set []string, path string) bool {
	for _, s := range set {
		if s == rbacv1.NonResourceAll || s == path {
			return true
		}
		if prefix, ok := strings.CutSuffix(s, "*"); ok && strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

// aggregateMessage joins errors as apimachinery's aggregate does: one
// alone, or "[a, b]".
func aggregateMessage(errs []error) string {
	if len(errs) == 1 {
		return errs[0].Error()
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}
