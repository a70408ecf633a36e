package rbaccontroller

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/rbac"
)

func openStore(t testing.TB) *db.Store {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// runCache starts c until the test ends.
func runCache(t testing.TB, c *Cache) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCacheFollowsTheStore(t *testing.T) {
	store := openStore(t)
	if err := EnsureDefaults(store); err != nil {
		t.Fatal(err)
	}
	bob := authenticationv1.UserInfo{Username: "bob", Groups: []string{"system:authenticated"}}
	listPods := rbac.Attributes{User: bob, Verb: "list", ResourceRequest: true, Resource: "pods", Namespace: "ns1"}
	c := NewCache(store)
	// Not yet run: answers from the store.
	if _, err := c.ClusterRole("cluster-admin"); err != nil {
		t.Fatalf("before the lists: %v", err)
	}
	runCache(t, c)

	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "b"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "reader"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}}
	if err := store.Create(db.RoleBindings, binding); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the dangling binding's reason", func() bool {
		_, reason := rbac.Authorize(c, listPods)
		return reason == `RBAC: clusterrole.rbac.authorization.k8s.io "reader" not found`
	})
	reader := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	if err := store.Create(db.ClusterRoles, reader); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob allowed", func() bool { ok, _ := rbac.Authorize(c, listPods); return ok })
	if _, err := store.Delete(db.RoleBindings, "ns1", "b"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob refused again", func() bool { ok, _ := rbac.Authorize(c, listPods); return !ok })
	if _, err := c.Role("ns1", "nope"); !apierrors.IsNotFound(err) {
		t.Errorf("a missing role: %v", err)
	}
}

func TestAggregationController(t *testing.T) {
	store := openStore(t)
	if err := EnsureDefaults(store); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- New(Config{Store: store}).Run(ctx) }()
	defer func() { cancel(); <-done }()
	extra := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "widgets-view",
		Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}}}
	if err := store.Create(db.ClusterRoles, extra); err != nil {
		t.Fatal(err)
	}
	// view, edit and admin all gather it (view's label aggregates it to edit, edit's to admin).
	for _, name := range []string{"view", "edit", "admin"} {
		eventually(t, name+" gathers widgets", func() bool {
			obj, err := store.Get(db.ClusterRoles, "", name)
			if err != nil {
				return false
			}
			for _, r := range obj.(*rbacv1.ClusterRole).Rules {
				if len(r.Resources) == 1 && r.Resources[0] == "widgets" {
					return true
				}
			}
			return false
		})
	}
}

func TestEnsureDefaults(t *testing.T) {
	store := openStore(t)
	if err := EnsureDefaults(store); err != nil {
		t.Fatal(err)
	}
	// An administrator's changes: a rule taken from an autoupdate role, a
	// subject added to a default binding, a role opted out of updates.
	if _, err := store.Modify(db.ClusterRoles, "", "system:basic-user", func(o db.Object) error {
		o.(*rbacv1.ClusterRole).Rules = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Modify(db.ClusterRoleBindings, "", "cluster-admin", func(o db.Object) error {
		b := o.(*rbacv1.ClusterRoleBinding)
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "ops"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Modify(db.ClusterRoles, "", "system:discovery", func(o db.Object) error {
		r := o.(*rbacv1.ClusterRole)
		r.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
		r.Rules = r.Rules[:0]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Delete(db.ClusterRoles, "", "edit"); err != nil {
		t.Fatal(err)
	}
	if err := EnsureDefaults(store); err != nil {
		t.Fatal(err)
	}
	get := func(r db.Resource, name string) db.Object {
		o, err := store.Get(r, "", name)
		if err != nil {
			t.Fatalf("%s %s: %v", r.Name, name, err)
		}
		return o
	}
	// NOTE: as kube's reconciliation, the missing rights come back one
	// verb and resource a rule.
	if rules := get(db.ClusterRoles, "system:basic-user").(*rbacv1.ClusterRole).Rules; len(rules) != 3 {
		t.Errorf("system:basic-user's rules were not put back: %v", rules)
	}
	if subjects := get(db.ClusterRoleBindings, "cluster-admin").(*rbacv1.ClusterRoleBinding).Subjects; len(subjects) != 2 {
		t.Errorf("cluster-admin's subjects: %v (the added one kept, system:masters there)", subjects)
	}
	if rules := get(db.ClusterRoles, "system:discovery").(*rbacv1.ClusterRole).Rules; len(rules) != 0 {
		t.Errorf("autoupdate false was updated: %v", rules)
	}
	if get(db.ClusterRoles, "edit").(*rbacv1.ClusterRole).AggregationRule == nil {
		t.Error("edit came back without its aggregationRule")
	}
}

// BenchmarkAuthorizeFromCache is RBAC's decision from the cache for a
// user allowed by the last of fifty RoleBindings (compare the API's
// BenchmarkAuthorizeFromStore).
func BenchmarkAuthorizeFromCache(b *testing.B) {
	store := openStore(b)
	if err := EnsureDefaults(store); err != nil {
		b.Fatal(err)
	}
	err := store.Write(func(tx *db.Tx) error {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "jobs"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"batch"}, Resources: []string{"jobs"}}}}
		if err := tx.Create(db.Roles, role); err != nil {
			return err
		}
		for i := range 50 {
			user := fmt.Sprintf("user-%d", i)
			if i == 49 {
				user = "bob"
			}
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("rb-%02d", i)},
				RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "jobs"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: user}}}
			if err := tx.Create(db.RoleBindings, rb); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	c := NewCache(store)
	runCache(b, c)
	a := rbac.Attributes{User: authenticationv1.UserInfo{Username: "bob", Groups: []string{"system:authenticated"}},
		Verb: "list", ResourceRequest: true, APIGroup: "batch", Resource: "jobs", Namespace: "default"}
	for {
		if ok, _ := rbac.Authorize(c, a); ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if ok, _ := rbac.Authorize(c, a); !ok {
			b.Fatal("refused")
		}
	}
}
