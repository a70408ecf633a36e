package rbac

import (
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// ConfirmNoEscalation returns an error unless user already holds, in
// namespace, every right rules grant: kube refuses a role or binding that
// would give more than its author has (unless the author may escalate or
// bind). The message is kube's, listing the missing rights.
func ConfirmNoEscalation(src Source, user authenticationv1.UserInfo, namespace string, rules []rbacv1.PolicyRule) error {
	owner, errs := RulesFor(src, user, namespace)
	covered, missing := validation.Covers(owner, rules)
	if covered {
		return nil
	}
	descriptions := map[string]bool{}
	for _, r := range compactRules(missing) {
		descriptions[compactString(r)] = true
	}
	lines := make([]string, 0, len(descriptions))
	for d := range descriptions {
		lines = append(lines, d)
	}
	slices.Sort(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		user.Username, user.Groups, strings.Join(lines, "\n"))
	if len(errs) > 0 {
		msg += fmt.Sprintf("; resolution errors: %v", errs)
	}
	return fmt.Errorf("%s", msg)
}

// EscalationAllowed: a member of system:masters may write any role or
// binding.
func EscalationAllowed(user authenticationv1.UserInfo) bool {
	return slices.Contains(user.Groups, GroupMasters)
}

// simpleResource keys the rules compactRules merges.
type simpleResource struct {
	group, resource, name string
	hasName               bool
}

// compactRules merges the rules on one group, one resource and at most one
// name into one rule with all their verbs, as kube does before listing the
// missing rights.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	simple := map[simpleResource]*rbacv1.PolicyRule{}
	var order []simpleResource
	for _, r := range rules {
		key, ok := simpleKey(r)
		if !ok {
			out = append(out, r)
			continue
		}
		if have, seen := simple[key]; seen {
			have.Verbs = append(have.Verbs, r.Verbs...)
			continue
		}
		simple[key] = r.DeepCopy()
		order = append(order, key)
	}
	for _, k := range order {
		out = append(out, *simple[k])
	}
	return out
}

func simpleKey(r rbacv1.PolicyRule) (simpleResource, bool) {
	if len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 || len(r.APIGroups) != 1 || len(r.Resources) != 1 {
		return simpleResource{}, false
	}
	k := simpleResource{group: r.APIGroups[0], resource: r.Resources[0]}
	if len(r.ResourceNames) == 1 {
		k.name, k.hasName = r.ResourceNames[0], true
	}
	return k, true
}

// compactString is kube's one-line form of a rule in escalation messages:
// {APIGroups:["batch"], Resources:["jobs"], Verbs:["get" "list"]}.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(name string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", name, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("NonResourceURLs", r.NonResourceURLs)
	add("ResourceNames", r.ResourceNames)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}
