//go:build integration

package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The users of the token file the authorization tests start skiffd with.
const (
	adminToken = "admin-token-0123456789"
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789"
	testTokens = adminToken + ",root,0,system:masters\n" +
		aliceToken + ",alice,1001\n" +
		bobToken + ",bob,1002,\"dev,qa\"\n"
)

// newAuthSkiffd starts a skiffd with testTokens as its --token-auth-file;
// its client is the token file's admin.
func newAuthSkiffd(t *testing.T) *skiffd {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(file, []byte(testTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSkiffd(t, "--token-auth-file", file)
	s.client = s.clientWithToken(adminToken)
	s.start()
	return s
}

// clientWithToken is a client-go client sending token.
func (s *skiffd) clientWithToken(token string) *kubernetes.Clientset {
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://" + s.addr, BearerToken: token,
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
}

// clientAs is the admin's client impersonating user (and groups).
func (s *skiffd) clientAs(token, user string, groups ...string) *kubernetes.Clientset {
	return kubernetes.NewForConfigOrDie(&rest.Config{Host: "http://" + s.addr, BearerToken: token,
		Impersonate:   rest.ImpersonationConfig{UserName: user, Groups: groups},
		ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
}

// canI asks, as kubectl auth can-i does, whether c's user may verb
// resource (with "/sub") in namespace.
func canI(t *testing.T, c kubernetes.Interface, verb, group, resource, ns string) bool {
	t.Helper()
	res, sub, _ := strings.Cut(resource, "/")
	review, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(context.Background(), &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Group: group, Resource: res, Subresource: sub, Namespace: ns}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("can-i %s %s: %v", verb, resource, err)
	}
	return review.Status.Allowed
}

// whoami is kubectl auth whoami: the SelfSubjectReview of c's user.
func whoami(c kubernetes.Interface) (authenticationv1.UserInfo, error) {
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return r.Status.UserInfo, nil
}

// rawGet GETs path with token ("" = no credentials) and returns the code
// and body.
func (s *skiffd) rawGet(t *testing.T, path, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+s.addr+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAuthentication drives kube's authentication through skiffd: no
// credentials are a 401 but for the health and version paths, a token of
// the file authenticates (kubectl auth whoami), a wrong one is a 401, and
// the unix socket is the admin.
func TestAuthentication(t *testing.T) {
	s := newAuthSkiffd(t)

	for path, want := range map[string]int{
		"/version": 200, "/livez": 200, "/readyz": 200, "/healthz": 200,
		"/api": 401, "/apis": 401, "/api/v1/namespaces/default/pods": 401, "/metrics": 401, "/readyz/store": 401, "/openapi/v3": 401,
	} {
		code, body := s.rawGet(t, path, "")
		if code != want {
			t.Errorf("GET %s without credentials = %d, want %d: %s", path, code, want, body)
		}
		if want == 401 {
			var st metav1.Status
			if err := json.Unmarshal([]byte(body), &st); err != nil || st.Reason != metav1.StatusReasonUnauthorized || st.Message != "Unauthorized" || st.Kind != "Status" {
				t.Errorf("GET %s: 401 body %s, want kube's Unauthorized Status", path, body)
			}
		}
	}
	if code, body := s.rawGet(t, "/api/v1/namespaces/default/pods", "guessed-token"); code != 401 {
		t.Errorf("a wrong token: %d %s", code, body)
	}
	if code, body := s.rawGet(t, "/api/v1/namespaces/default/pods", adminToken); code != 200 {
		t.Errorf("the admin token: %d %s", code, body)
	}
	// The socket needs no credentials: its requests are system:admin.
	out, err := exec.Command("curl", "-sS", "--unix-socket", s.socket, "-X", "POST", "-H", "Content-Type: application/json",
		"-d", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`,
		"http://localhost/apis/authentication.k8s.io/v1/selfsubjectreviews").CombinedOutput()
	var socketReview authenticationv1.SelfSubjectReview
	if err != nil || json.Unmarshal(out, &socketReview) != nil || socketReview.Status.UserInfo.Username != "system:admin" ||
		!slices.Contains(socketReview.Status.UserInfo.Groups, "system:masters") {
		t.Errorf("whoami over the socket: %v %s", err, out)
	}

	who, err := whoami(s.clientWithToken(bobToken))
	if diff := cmp.Diff(authenticationv1.UserInfo{Username: "bob", UID: "1002", Groups: []string{"dev", "qa", "system:authenticated"}}, who); err != nil || diff != "" {
		t.Errorf("whoami as bob: %v (-want,+got):\n%s", err, diff)
	}
	if _, err := whoami(s.clientWithToken("wrong")); !apierrors.IsUnauthorized(err) {
		t.Errorf("whoami with a wrong token: %v", err)
	}

	// TokenReview: what kube's webhook clients ask.
	review := `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"` + aliceToken + `"}}`
	req, _ := http.NewRequest("POST", "http://"+s.addr+"/apis/authentication.k8s.io/v1/tokenreviews", strings.NewReader(review))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 || !strings.Contains(string(b), `"authenticated":true`) || !strings.Contains(string(b), `"username":"alice"`) {
		t.Errorf("TokenReview of alice's token: %d %s", resp.StatusCode, b)
	}
}

// TestRBAC drives authorization through skiffd with client-go: a user
// without rights is refused with kube's message, can-i changes with a
// RoleBinding, impersonation needs the impersonate verb, escalation is
// refused, rules of unknown verbs and resources grant nothing, and the
// default roles come back after a restart.
func TestRBAC(t *testing.T) {
	s := newAuthSkiffd(t)
	ctx := context.Background()
	admin, alice, bob := s.client, s.clientWithToken(aliceToken), s.clientWithToken(bobToken)

	_, err := alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"` {
		t.Errorf("alice lists pods: %v", err)
	}
	_, err = alice.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `jobs.batch is forbidden: User "alice" cannot list resource "jobs" in API group "batch" in the namespace "default"` {
		t.Errorf("alice lists jobs: %v", err)
	}
	_, err = alice.CoreV1().Nodes().Get(ctx, "x", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `nodes "x" is forbidden: User "alice" cannot get resource "nodes" in API group "" at the cluster scope` {
		t.Errorf("alice gets a node: %v", err)
	}
	if code, body := s.rawGet(t, "/metrics", aliceToken); code != 403 || !strings.Contains(body, `forbidden: User \"alice\" cannot get path \"/metrics\"`) {
		t.Errorf("alice reads /metrics: %d %s", code, body)
	}
	if code, _ := s.rawGet(t, "/apis", aliceToken); code != 200 {
		t.Errorf("alice's discovery (system:discovery): %d", code)
	}
	if canI(t, alice, "list", "", "pods", "default") {
		t.Error("alice may list pods before any binding")
	}

	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-admin", Namespace: "default"},
		RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}}
	if _, err := admin.RbacV1().RoleBindings("default").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "admin aggregated: alice may list pods", func() (bool, error) {
		return canI(t, alice, "list", "", "pods", "default"), nil
	})
	if _, err := alice.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("alice lists pods after the binding: %v", err)
	}
	for _, c := range []struct {
		verb, group, resource, ns string
		want                      bool
	}{
		{"list", "", "pods", "kube-system", false},
		{"get", "", "pods/log", "default", true},
		{"create", "batch", "jobs", "default", true},
		{"create", "rbac.authorization.k8s.io", "rolebindings", "default", true},
		{"create", "rbac.authorization.k8s.io", "clusterroles", "", false},
		{"update", "", "pods/status", "default", false},
	} {
		if got := canI(t, alice, c.verb, c.group, c.resource, c.ns); got != c.want {
			t.Errorf("alice can-i %s %s in %q = %v, want %v", c.verb, c.resource, c.ns, got, c.want)
		}
	}
	rules, err := alice.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil || !slices.ContainsFunc(rules.Status.ResourceRules, func(r authorizationv1.ResourceRule) bool {
		return slices.Contains(r.Resources, "rolebindings") && slices.Contains(r.Verbs, "create")
	}) {
		t.Errorf("alice's rules in default (can-i --list): %v %+v", err, rules)
	}

	// Impersonation: the admin may; alice may not.
	if !canI(t, s.clientAs(adminToken, "alice"), "list", "", "pods", "default") {
		t.Error("can-i --as alice: no")
	}
	if canI(t, s.clientAs(adminToken, "bob"), "list", "", "pods", "default") {
		t.Error("can-i --as bob: yes")
	}
	if who, err := whoami(s.clientAs(adminToken, "system:serviceaccount:default:default")); err != nil ||
		!slices.Equal(who.Groups, []string{"system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"}) {
		t.Errorf("whoami --as a ServiceAccount: %v %+v", err, who)
	}
	_, err = s.clientAs(aliceToken, "root").CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || err.Error() != `users "root" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope` {
		t.Errorf("alice impersonating root: %v", err)
	}

	// Escalation: alice (admin of default) may grant what she holds, not more.
	podReader := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	if _, err := alice.RbacV1().Roles("default").Create(ctx, podReader, metav1.CreateOptions{}); err != nil {
		t.Errorf("alice creating a role within her rights: %v", err)
	}
	nodeReader := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "node-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}}
	_, err = alice.RbacV1().Roles("default").Create(ctx, nodeReader, metav1.CreateOptions{})
	want := `roles.rbac.authorization.k8s.io "node-reader" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("alice escalating with a role: %v\nwant %s", err, want)
	}
	rootBinding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-root"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}}
	_, err = alice.RbacV1().RoleBindings("default").Create(ctx, rootBinding, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.HasPrefix(err.Error(), `rolebindings.rbac.authorization.k8s.io "alice-root" is forbidden: user "alice"`) {
		t.Errorf("alice binding cluster-admin: %v", err)
	}
	bobReads := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-reads"},
		RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}}
	if _, err := alice.RbacV1().RoleBindings("default").Create(ctx, bobReads, metav1.CreateOptions{}); err != nil {
		t.Errorf("alice binding a role within her rights: %v", err)
	}
	if !canI(t, bob, "list", "", "pods", "default") {
		t.Error("bob may not list pods after alice's binding")
	}
	code, body := s.rawTable(t, "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings")
	if code != 200 || !strings.Contains(body, `["alice-admin","ClusterRole/admin",`) || !strings.Contains(body, `["bob-reads","Role/pod-reader",`) {
		t.Errorf("the rolebindings table: %d %s", code, body)
	}

	// Rules of unknown verbs and resources are stored and grant nothing.
	weird := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "weird"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"frobnicate"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		{Verbs: []string{"get", "list"}, APIGroups: []string{"widgets.example.com"}, Resources: []string{"widgets"}},
	}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, weird, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a role of unknown verbs and resources: %v", err)
	}
	weirdBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "weird"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "weird"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, weirdBinding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if canI(t, bob, "list", "", "pods", "kube-system") {
		t.Error("a frobnicate rule lets bob list pods")
	}

	// The default roles: deleted ones come back at the next start.
	if err := admin.RbacV1().ClusterRoles().Delete(ctx, "view", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, "system:basic-user", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := whoami(bob); !apierrors.IsForbidden(err) {
		t.Errorf("whoami without system:basic-user: %v", err)
	}
	s.stop()
	s.start()
	waitFor(t, 30*time.Second, "view back and aggregated", func() (bool, error) {
		r, err := admin.RbacV1().ClusterRoles().Get(ctx, "view", metav1.GetOptions{})
		return err == nil && len(r.Rules) > 5 && r.Annotations[rbacv1.AutoUpdateAnnotationKey] == "true", nil
	})
	if _, err := whoami(bob); err != nil {
		t.Errorf("whoami after the restart: %v", err)
	}
	roles, err := admin.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range roles.Items {
		names = append(names, r.Name)
	}
	for _, want := range []string{"cluster-admin", "admin", "edit", "view", "system:discovery", "system:public-info-viewer", "system:basic-user"} {
		if !slices.Contains(names, want) {
			t.Errorf("clusterroles lack %s: %v", want, names)
		}
	}
	if !canI(t, bob, "list", "", "pods", "default") {
		t.Error("bob's binding lost in the restart")
	}
}

// rawTable GETs path as the admin, asking for a Table as kubectl get does.
func (s *skiffd) rawTable(t *testing.T, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+s.addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
