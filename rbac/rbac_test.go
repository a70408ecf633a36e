package rbac

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// staticSource is a Source over slices.
type staticSource struct {
	roles        []*rbacv1.Role
	clusterRoles []*rbacv1.ClusterRole
	rbs          []*rbacv1.RoleBinding
	crbs         []*rbacv1.ClusterRoleBinding
}

func (s staticSource) ClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error) { return s.crbs, nil }
func (s staticSource) RoleBindings(ns string) ([]*rbacv1.RoleBinding, error) {
	var out []*rbacv1.RoleBinding
	for _, b := range s.rbs {
		if b.Namespace == ns {
			out = append(out, b)
		}
	}
	return out, nil
}
func (s staticSource) ClusterRole(name string) (*rbacv1.ClusterRole, error) {
	for _, r := range s.clusterRoles {
		if r.Name == name {
			return r, nil
		}
	}
	return nil, fmt.Errorf("clusterrole.rbac.authorization.k8s.io %q not found", name)
}
func (s staticSource) Role(ns, name string) (*rbacv1.Role, error) {
	for _, r := range s.roles {
		if r.Namespace == ns && r.Name == name {
			return r, nil
		}
	}
	return nil, fmt.Errorf("role.rbac.authorization.k8s.io %q not found", name)
}

func TestRuleAllows(t *testing.T) {
	res := func(verb, group, resource, sub, name string) Attributes {
		return Attributes{ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Name: name}
	}
	path := func(verb, p string) Attributes { return Attributes{Verb: verb, Path: p} }
	r := func(verbs, groups, resources, names []string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	s := func(v ...string) []string { return v }
	tests := map[string]struct {
		rule rbacv1.PolicyRule
		a    Attributes
		want bool
	}{
		"exact":                            {r(s("get"), s(""), s("pods"), nil), res("get", "", "pods", "", "p"), true},
		"other verb":                       {r(s("get"), s(""), s("pods"), nil), res("list", "", "pods", "", ""), false},
		"verb star":                        {r(s("*"), s(""), s("pods"), nil), res("deletecollection", "", "pods", "", ""), true},
		"other group":                      {r(s("get"), s(""), s("jobs"), nil), res("get", "batch", "jobs", "", ""), false},
		"group star":                       {r(s("get"), s("*"), s("jobs"), nil), res("get", "batch", "jobs", "", ""), true},
		"resource star":                    {r(s("get"), s("batch"), s("*"), nil), res("get", "batch", "cronjobs", "", ""), true},
		"resource star covers subresource": {r(s("get"), s(""), s("*"), nil), res("get", "", "pods", "log", "p"), true},
		"resource does not cover its subresource": {r(s("get"), s(""), s("pods"), nil), res("get", "", "pods", "log", "p"), false},
		"subresource":                     {r(s("get"), s(""), s("pods/log"), nil), res("get", "", "pods", "log", "p"), true},
		"subresource is not the resource": {r(s("get"), s(""), s("pods/log"), nil), res("get", "", "pods", "", "p"), false},
		"star slash subresource":          {r(s("get"), s(""), s("*/status"), nil), res("get", "", "pods", "status", "p"), true},
		"star slash other subresource":    {r(s("get"), s(""), s("*/status"), nil), res("get", "", "pods", "log", "p"), false},
		"star slash is no resource":       {r(s("get"), s(""), s("*/status"), nil), res("get", "", "pods", "", "p"), false},
		"resource name":                   {r(s("get"), s(""), s("pods"), s("a", "b")), res("get", "", "pods", "", "b"), true},
		"other resource name":             {r(s("get"), s(""), s("pods"), s("a")), res("get", "", "pods", "", "c"), false},
		"names and a list":                {r(s("list"), s(""), s("pods"), s("a")), res("list", "", "pods", "", ""), false},
		"unknown verb grants nothing":     {r(s("frobnicate"), s(""), s("pods"), nil), res("get", "", "pods", "", ""), false},
		"unknown resource grants nothing": {r(s("get"), s(""), s("widgets"), nil), res("get", "", "pods", "", ""), false},
		"resource rule, path request":     {r(s("get"), s("*"), s("*"), nil), path("get", "/version"), false},
		"url":                             {rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/version")}, path("get", "/version"), true},
		"url other verb":                  {rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/version")}, path("post", "/version"), false},
		"url prefix":                      {rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/apis/*")}, path("get", "/apis/batch/v1"), true},
		"url prefix is not the root":      {rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/apis/*")}, path("get", "/apis"), false},
		"url star":                        {rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("*")}, path("get", "/metrics"), true},
		"url rule, resource request":      {rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("*")}, res("get", "", "pods", "", ""), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := RuleAllows(tc.a, &tc.rule); got != tc.want {
				t.Errorf("RuleAllows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAuthorize(t *testing.T) {
	podReader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	jobWriter := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "job-writer"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{"batch"}, Resources: []string{"jobs"}}}}
	src := staticSource{
		clusterRoles: []*rbacv1.ClusterRole{podReader},
		roles:        []*rbacv1.Role{jobWriter},
		crbs: []*rbacv1.ClusterRoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "readers"},
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"},
			Subjects: []rbacv1.Subject{{Kind: "Group", Name: "readers"}}}},
		rbs: []*rbacv1.RoleBinding{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "w"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "job-writer"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}, {Kind: "ServiceAccount", Name: "default"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "r"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"},
				Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "sa", Namespace: "ns2"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "dangling"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "gone"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "carol"}}},
		},
	}
	user := func(name string, groups ...string) authenticationv1.UserInfo {
		return authenticationv1.UserInfo{Username: name, Groups: groups}
	}
	createJob := func(u authenticationv1.UserInfo, ns string) Attributes {
		return Attributes{User: u, Verb: "create", ResourceRequest: true, APIGroup: "batch", Resource: "jobs", Namespace: ns}
	}
	listPods := func(u authenticationv1.UserInfo, ns string) Attributes {
		return Attributes{User: u, Verb: "list", ResourceRequest: true, Resource: "pods", Namespace: ns}
	}
	tests := map[string]struct {
		a          Attributes
		want       bool
		wantReason string
	}{
		"reason names the binding": {a: listPods(user("system:serviceaccount:ns2:sa"), "ns1"), want: true,
			wantReason: `RBAC: allowed by RoleBinding "r/ns1" of ClusterRole "pod-reader" to ServiceAccount "sa/ns2"`},
		"masters":                           {a: createJob(user("root", GroupMasters), "any"), want: true},
		"nobody":                            {a: createJob(user("bob"), "ns1")},
		"role binding in its namespace":     {a: createJob(user("alice"), "ns1"), want: true},
		"role binding elsewhere":            {a: createJob(user("alice"), "ns2")},
		"role binding, cluster scope":       {a: createJob(user("alice"), "")},
		"cluster binding by group, any ns":  {a: listPods(user("x", "readers"), "ns9"), want: true},
		"cluster binding, cluster scope":    {a: listPods(user("x", "readers"), ""), want: true},
		"SA subject defaults to binding ns": {a: createJob(user("system:serviceaccount:ns1:default"), "ns1"), want: true},
		"SA of another ns, same name":       {a: createJob(user("system:serviceaccount:ns2:default"), "ns1")},
		"SA subject with its namespace":     {a: listPods(user("system:serviceaccount:ns2:sa"), "ns1"), want: true},
		"user named like an SA is not one":  {a: listPods(user("sa"), "ns1")},
		"dangling role ref is a reason":     {a: createJob(user("carol"), "ns1"), wantReason: `RBAC: role.rbac.authorization.k8s.io "gone" not found`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, reason := Authorize(src, tc.a)
			if got != tc.want || (tc.wantReason != "" || !got) && reason != tc.wantReason {
				t.Errorf("Authorize = %v, %q; want %v, %q", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

func TestConfirmNoEscalation(t *testing.T) {
	src := staticSource{
		clusterRoles: []*rbacv1.ClusterRole{{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}},
		crbs: []*rbacv1.ClusterRoleBinding{{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "pods"},
			Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}}},
	}
	bob := authenticationv1.UserInfo{Username: "bob", Groups: []string{"system:authenticated"}}
	if err := ConfirmNoEscalation(src, bob, "ns1", []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}); err != nil {
		t.Errorf("a subset of bob's rights: %v", err)
	}
	err := ConfirmNoEscalation(src, bob, "ns1", []rbacv1.PolicyRule{
		{Verbs: []string{"get", "delete", "create"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: []string{"get"}, APIGroups: []string{"batch"}, Resources: []string{"jobs"}},
	})
	want := `user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["delete" "create"]}
{APIGroups:["batch"], Resources:["jobs"], Verbs:["get"]}`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v\nwant %s", err, want)
	}
}

func TestAggregatedRules(t *testing.T) {
	var all []*rbacv1.ClusterRole
	for i := range DefaultClusterRoles() {
		all = append(all, &DefaultClusterRoles()[i])
	}
	byName := map[string]*rbacv1.ClusterRole{}
	for _, r := range all {
		byName[r.Name] = r
	}
	// Fill in order, as the controller converges: view, then edit, then admin.
	for _, name := range []string{"view", "edit", "admin"} {
		byName[name].Rules = AggregatedRules(byName[name], all)
	}
	if diff := cmp.Diff(viewRules(), byName["view"].Rules); diff != "" {
		t.Errorf("view (-want,+got):\n%s", diff)
	}
	if got, want := len(byName["edit"].Rules), len(editRules())+len(viewRules()); got != want {
		t.Errorf("edit has %d rules, want %d (edit's and view's)", got, want)
	}
	admin := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "admin"}, Rules: byName["admin"].Rules}
	canAdmin := func(verb, group, resource string) bool {
		ok, _ := Authorize(staticSource{clusterRoles: []*rbacv1.ClusterRole{admin},
			crbs: []*rbacv1.ClusterRoleBinding{{RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "admin"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "a"}}}}},
			Attributes{User: authenticationv1.UserInfo{Username: "a"}, Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Namespace: "n"})
		return ok
	}
	for _, c := range [][3]string{{"create", "rbac.authorization.k8s.io", "rolebindings"}, {"delete", "batch", "jobs"}, {"get", "", "pods/log"}} {
		if !canAdmin(c[0], c[1], c[2]) {
			t.Errorf("admin cannot %v", c)
		}
	}
	if canAdmin("create", "rbac.authorization.k8s.io", "clusterroles") {
		t.Error("admin can create clusterroles")
	}
	broken := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "x"}, AggregationRule: &rbacv1.AggregationRule{
		ClusterRoleSelectors: []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bad"}}}}}}
	if got := AggregatedRules(broken, all); len(got) != 0 {
		t.Errorf("an invalid selector picked %d rules", len(got))
	}
}

func TestDefaultBindingsNameDefaultRoles(t *testing.T) {
	roles := map[string]bool{}
	for _, r := range DefaultClusterRoles() {
		roles[r.Name] = true
		if r.Annotations[rbacv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("%s is not autoupdate", r.Name)
		}
	}
	for _, b := range DefaultClusterRoleBindings() {
		if !roles[b.RoleRef.Name] || !strings.HasPrefix(b.RoleRef.APIGroup, "rbac.") {
			t.Errorf("binding %s refers to %+v", b.Name, b.RoleRef)
		}
	}
}
