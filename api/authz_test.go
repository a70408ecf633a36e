package api

import (
	"encoding/json"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/authn"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/rbac"
)

// newAuthTestServer is a test server that authenticates the tokens
// "root" (system:masters), "alice" and "bob", with kube's default roles
// and bindings in its store.
func newAuthTestServer(t testing.TB) *testServer {
	t.Helper()
	tokens, err := authn.ParseTokenFile(strings.NewReader("root,root,0,system:masters\nalice,alice,1\nbob,bob,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServerWith(t, Config{Authenticator: authn.New(authn.Config{Tokens: []authn.TokenAuthenticator{tokens}})})
	err = ts.store.Write(func(tx *db.Tx) error {
		for _, r := range rbac.DefaultClusterRoles() {
			if err := tx.Create(db.ClusterRoles, &r); err != nil {
				return err
			}
		}
		for _, b := range rbac.DefaultClusterRoleBindings() {
			if err := tx.Create(db.ClusterRoleBindings, &b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func bearer(token string) string { return "Authorization: Bearer " + token }

func TestAuthFilter(t *testing.T) {
	ts := newAuthTestServer(t)
	tests := map[string]struct {
		method, path, body string
		headers            []string
		wantCode           int
		wantMessage        string
	}{
		"anonymous version":              {method: "GET", path: "/version", wantCode: 200},
		"anonymous version slash":        {method: "GET", path: "/version/", wantCode: 200},
		"anonymous livez":                {method: "GET", path: "/livez", wantCode: 200},
		"anonymous discovery":            {method: "GET", path: "/api", wantCode: 401, wantMessage: "Unauthorized"},
		"anonymous health check detail":  {method: "GET", path: "/livez/ping", wantCode: 401, wantMessage: "Unauthorized"},
		"a wrong token on an open path":  {method: "GET", path: "/version", headers: []string{bearer("nope")}, wantCode: 401, wantMessage: "Unauthorized"},
		"basic auth is no credential":    {method: "GET", path: "/api", headers: []string{"Authorization: Basic YTpi"}, wantCode: 401},
		"authenticated discovery":        {method: "GET", path: "/apis", headers: []string{bearer("alice")}, wantCode: 200},
		"authenticated openapi":          {method: "GET", path: "/openapi/v2", headers: []string{bearer("alice")}, wantCode: 200},
		"a non-resource path is refused": {method: "GET", path: "/metrics", headers: []string{bearer("alice")}, wantCode: 403, wantMessage: `forbidden: User "alice" cannot get path "/metrics"`},
		"post on a path":                 {method: "POST", path: "/version", headers: []string{bearer("alice")}, wantCode: 403, wantMessage: `forbidden: User "alice" cannot post path "/version"`},
		"a subresource":                  {method: "GET", path: "/api/v1/namespaces/ns1/pods/p/log", headers: []string{bearer("alice")}, wantCode: 403, wantMessage: `pods "p" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "ns1"`},
		"a watch":                        {method: "GET", path: "/apis/batch/v1/jobs?watch=1", headers: []string{bearer("alice")}, wantCode: 403, wantMessage: `jobs.batch is forbidden: User "alice" cannot watch resource "jobs" in API group "batch" at the cluster scope`},
		"masters":                        {method: "GET", path: "/api/v1/nodes", headers: []string{bearer("root")}, wantCode: 200},
		"groups without a user": {method: "GET", path: "/api", headers: []string{bearer("root"), "Impersonate-Group: dev"}, wantCode: 500,
			wantMessage: "Internal error occurred: requested impersonation of groups, uid or extra without impersonating a user"},
		"impersonated groups are checked": {method: "GET", path: "/api", headers: []string{bearer("alice"), "Impersonate-User: alice", "Impersonate-Group: system:masters"}, wantCode: 403,
			wantMessage: `users "alice" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`},
		"impersonating a ServiceAccount": {method: "GET", path: "/api", headers: []string{bearer("bob"), "Impersonate-User: system:serviceaccount:ns1:builder"}, wantCode: 403,
			wantMessage: `serviceaccounts "builder" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1"`},
		"an impersonated user has its rights only": {method: "GET", path: "/api/v1/nodes", headers: []string{bearer("root"), "Impersonate-User: bob"}, wantCode: 403,
			wantMessage: `nodes is forbidden: User "bob" cannot list resource "nodes" in API group "" at the cluster scope`},
		"impersonating masters": {method: "GET", path: "/api/v1/nodes", headers: []string{bearer("root"), "Impersonate-User: x", "Impersonate-Group: system:masters"}, wantCode: 200},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ts.do(t, tc.method, tc.path, tc.body, tc.headers...)
			if got.code != tc.wantCode {
				t.Fatalf("%s %s = %d, want %d: %s", tc.method, tc.path, got.code, tc.wantCode, got.body)
			}
			if tc.wantMessage != "" {
				if st := statusOf(t, got.body); st.Message != tc.wantMessage {
					t.Errorf("message = %q\nwant      %q", st.Message, tc.wantMessage)
				}
			}
		})
	}
}

func TestReviews(t *testing.T) {
	ts := newAuthTestServer(t)
	sar := func(spec string) string {
		return `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":` + spec + `}`
	}
	tests := map[string]struct {
		path, body, token string
		wantCode          int
		wantIn            []string
	}{
		"SAR allowed": {path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", token: "root",
			body: sar(`{"user":"bob","groups":["system:authenticated"],"nonResourceAttributes":{"path":"/apis/batch","verb":"get"}}`), wantCode: 201,
			wantIn: []string{`"allowed":true`, `RBAC: allowed by ClusterRoleBinding \"system:discovery\" of ClusterRole \"system:discovery\" to Group \"system:authenticated\"`}},
		"SAR denied": {path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", token: "root",
			body: sar(`{"user":"bob","resourceAttributes":{"verb":"list","resource":"pods","namespace":"x"}}`), wantCode: 201, wantIn: []string{`"allowed":false`}},
		"SAR needs rights": {path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", token: "bob",
			body: sar(`{"user":"bob","resourceAttributes":{"verb":"list","resource":"pods"}}`), wantCode: 403,
			wantIn: []string{`subjectaccessreviews.authorization.k8s.io is forbidden: User \"bob\" cannot create resource \"subjectaccessreviews\"`}},
		"SAR of both kinds": {path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", token: "root",
			body: sar(`{"user":"bob","resourceAttributes":{"verb":"list"},"nonResourceAttributes":{"path":"/"}}`), wantCode: 422,
			wantIn: []string{`spec.nonResourceAttributes: Invalid value: \"\": cannot be specified in combination with resourceAttributes`}},
		"SAR of no one": {path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", token: "root",
			body: sar(`{"resourceAttributes":{"verb":"list"}}`), wantCode: 422, wantIn: []string{`spec.user: Invalid value: \"\": at least one of user or group must be specified`}},
		"local SAR in another namespace": {path: "/apis/authorization.k8s.io/v1/namespaces/a/localsubjectaccessreviews", token: "root",
			body: `{"spec":{"user":"bob","resourceAttributes":{"verb":"list","resource":"pods","namespace":"b"}}}`, wantCode: 400,
			wantIn: []string{`spec.resourceAttributes.namespace must match namespace: a`}},
		"SSAR": {path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", token: "alice",
			body: `{"spec":{"nonResourceAttributes":{"path":"/version","verb":"get"}}}`, wantCode: 201, wantIn: []string{`"allowed":true`, `"kind":"SelfSubjectAccessReview"`}},
		"SSRR of masters": {path: "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", token: "root",
			body: `{"spec":{"namespace":"default"}}`, wantCode: 201, wantIn: []string{`{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}`}},
		"SSRR without a namespace": {path: "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", token: "alice",
			body: `{"spec":{}}`, wantCode: 422, wantIn: []string{`spec.namespace: Required value`}},
		"whoami": {path: "/apis/authentication.k8s.io/v1/selfsubjectreviews", token: "alice", body: `{}`, wantCode: 201,
			wantIn: []string{`"userInfo":{"username":"alice","uid":"1","groups":["system:authenticated"]}`}},
		"TokenReview of a bad token": {path: "/apis/authentication.k8s.io/v1/tokenreviews", token: "root",
			body: `{"spec":{"token":"guess"}}`, wantCode: 201, wantIn: []string{`"status":{"user":{}}`}},
		"TokenReview without a token": {path: "/apis/authentication.k8s.io/v1/tokenreviews", token: "root",
			body: `{"spec":{}}`, wantCode: 400, wantIn: []string{`token is required for TokenReview`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ts.do(t, "POST", tc.path, tc.body, bearer(tc.token))
			compact := strings.Join(strings.Fields(got.body), "")
			if got.code != tc.wantCode {
				t.Fatalf("code = %d, want %d: %s", got.code, tc.wantCode, got.body)
			}
			for _, want := range tc.wantIn {
				if !strings.Contains(compact, strings.Join(strings.Fields(want), "")) {
					t.Errorf("body lacks %s:\n%s", want, got.body)
				}
			}
		})
	}
}

func TestRBACValidation(t *testing.T) {
	ts := newAuthTestServer(t)
	const rbacPath = "/apis/rbac.authorization.k8s.io/v1"
	tests := map[string]struct {
		path, body  string
		wantCode    int
		wantMessage string
	}{
		"a rule without verbs": {path: "/namespaces/default/roles", body: `{"metadata":{"name":"r"},"rules":[{"apiGroups":[""],"resources":["pods"]}]}`, wantCode: 422,
			wantMessage: `Role.rbac.authorization.k8s.io "r" is invalid: rules[0].verbs: Required value: verbs must contain at least one value`},
		"a URL in a namespaced role": {path: "/namespaces/default/roles", body: `{"metadata":{"name":"r"},"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]}`, wantCode: 422,
			wantMessage: `Role.rbac.authorization.k8s.io "r" is invalid: rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource URLs`},
		"a name with a colon": {path: "/clusterroles", body: `{"metadata":{"name":"a:b"},"rules":[{"verbs":["get"],"nonResourceURLs":["/x"]}]}`, wantCode: 201},
		"a name with a slash": {path: "/clusterroles", body: `{"metadata":{"name":"a/b"}}`, wantCode: 422,
			wantMessage: `ClusterRole.rbac.authorization.k8s.io "a/b" is invalid: metadata.name: Invalid value: "a/b": may not contain '/'`},
		"a cluster binding of a Role": {path: "/clusterrolebindings", body: `{"metadata":{"name":"b"},"roleRef":{"kind":"Role","name":"x"}}`, wantCode: 422,
			wantMessage: `ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`},
		"a ServiceAccount without a namespace": {path: "/clusterrolebindings",
			body: `{"metadata":{"name":"b"},"roleRef":{"kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"sa"}]}`, wantCode: 422,
			wantMessage: `ClusterRoleBinding.rbac.authorization.k8s.io "b" is invalid: subjects[0].namespace: Required value`},
		"an unknown subject kind": {path: "/namespaces/default/rolebindings",
			body: `{"metadata":{"name":"b"},"roleRef":{"kind":"ClusterRole","name":"view"},"subjects":[{"kind":"Robot","name":"r2"}]}`, wantCode: 422,
			wantMessage: `RoleBinding.rbac.authorization.k8s.io "b" is invalid: subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ts.do(t, "POST", rbacPath+tc.path, tc.body, bearer("root"))
			if got.code != tc.wantCode {
				t.Fatalf("code = %d, want %d: %s", got.code, tc.wantCode, got.body)
			}
			if tc.wantMessage != "" {
				if st := statusOf(t, got.body); st.Message != tc.wantMessage {
					t.Errorf("message = %q\nwant      %q", st.Message, tc.wantMessage)
				}
			}
		})
	}

	// Defaults: the roleRef's and a User's apiGroup; and roleRef is immutable.
	got := ts.do(t, "POST", rbacPath+"/namespaces/default/rolebindings",
		`{"metadata":{"name":"rb"},"roleRef":{"kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","name":"u"},{"kind":"ServiceAccount","name":"sa"}]}`, bearer("root"))
	var rb rbacv1.RoleBinding
	if err := json.Unmarshal([]byte(got.body), &rb); err != nil || got.code != 201 {
		t.Fatalf("creating a binding: %d %s", got.code, got.body)
	}
	if rb.RoleRef.APIGroup != rbacv1.GroupName || rb.Subjects[0].APIGroup != rbacv1.GroupName || rb.Subjects[1].APIGroup != "" || rb.Generation != 0 {
		t.Errorf("defaults: %+v", rb)
	}
	got = ts.do(t, "PATCH", rbacPath+"/namespaces/default/rolebindings/rb", `{"roleRef":{"name":"edit"}}`,
		bearer("root"), "Content-Type: application/merge-patch+json")
	if st := statusOf(t, got.body); got.code != 422 || !strings.Contains(st.Message, "roleRef: Invalid value: ") || !strings.HasSuffix(st.Message, "cannot change roleRef") {
		t.Errorf("changing roleRef: %d %s", got.code, got.body)
	}
	table := ts.do(t, "GET", rbacPath+"/clusterroles/view", "", bearer("root"), "Accept: application/json;as=Table;v=v1;g=meta.k8s.io")
	if !strings.Contains(table.body, `"name":"Created At"`) || !strings.Contains(table.body, `"cells":["view","`) {
		t.Errorf("the clusterrole table: %s", table.body)
	}
}

func TestWebsocketExecNeedsCreate(t *testing.T) {
	ts := newAuthTestServer(t)
	// bob may get pods/exec and pods/portforward in ns1 but not create them.
	err := ts.store.Write(func(tx *db.Tx) error {
		role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "exec-get"},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/exec", "pods/portforward"}}}}
		if err := tx.Create(db.Roles, role); err != nil {
			return err
		}
		return tx.Create(db.RoleBindings, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "b"},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "exec-get"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	for sub, query := range map[string]string{"exec": "?command=ls", "portforward": "?ports=80"} {
		got := ts.do(t, "GET", "/api/v1/namespaces/ns1/pods/p/"+sub+query, "", bearer("bob"))
		if st := statusOf(t, got.body); got.code != 403 || st.Message != `pods "p" is forbidden: User "bob" cannot create resource "pods/`+sub+`" in API group "" in the namespace "ns1"` {
			t.Errorf("%s with get only: %d %s", sub, got.code, got.body)
		}
	}
}

func TestRoleFromProtobuf(t *testing.T) {
	ts := newAuthTestServer(t)
	raw, err := (&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pb"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r := ts.do(t, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", string(append([]byte("k8s\x00"), envelope...)),
		"Content-Type: application/vnd.kubernetes.protobuf", bearer("root"))
	var role rbacv1.Role
	mustJSON(t, r.body, &role)
	if r.code != 201 || len(role.Rules) != 1 || role.Rules[0].Resources[0] != "pods" {
		t.Errorf("protobuf create = %d %s", r.code, r.body)
	}
	// A protobuf write is authorized as any: bob may not create roles.
	r = ts.do(t, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", string(append([]byte("k8s\x00"), envelope...)),
		"Content-Type: application/vnd.kubernetes.protobuf", bearer("bob"))
	if r.code != 403 {
		t.Errorf("bob creating a role = %d %s", r.code, r.body)
	}
}
