package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet"
)

// newLifecycleServer is a test server with NamespaceLifecycle on and the
// given namespaces stored.
func newLifecycleServer(t *testing.T, namespaces ...string) *testServer {
	t.Helper()
	dir := t.TempDir()
	store, err := db.Open(filepath.Join(dir, "skiff.db"))
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	for _, ns := range namespaces {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		kube.PrepareNamespaceForCreate(obj)
		if err := store.Create(db.Namespaces, obj); err != nil {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
	h := New(Config{Store: store, Streams: kubelet.NewStreams(nil, store, filepath.Join(dir, "logs"), nil), NodeName: "node-a", NamespaceLifecycle: true,
		Version: version.Info{Major: "1", Minor: "34", GitVersion: "v1.34.0-skiff"}})
	ts := &testServer{Server: httptest.NewServer(h), store: store, logRoot: filepath.Join(dir, "logs"), watches: make(chan string, 100)}
	t.Cleanup(func() {
		ts.Close()
		_ = store.Close()
	})
	return ts
}

func TestNamespaceCreate(t *testing.T) {
	ts := newLifecycleServer(t)
	r := ts.mustDo(t, "POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a","namespace":"ignored"}}`)
	if r.code != http.StatusCreated {
		t.Fatalf("code %d: %s", r.code, r.body)
	}
	var ns corev1.Namespace
	mustJSON(t, r.body, &ns)
	want := corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Labels: map[string]string{"kubernetes.io/metadata.name": "team-a"}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
	ns.UID, ns.ResourceVersion, ns.CreationTimestamp, ns.Generation, ns.ManagedFields = "", "", metav1.Time{}, 0, nil
	if diff := cmp.Diff(want, ns); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	// The name label cannot be changed, nor can spec.finalizers by an update.
	r = ts.mustDo(t, "PATCH", "/api/v1/namespaces/team-a",
		`{"metadata":{"labels":{"kubernetes.io/metadata.name":"x","team":"a"}},"spec":{"finalizers":[]}}`,
		"Content-Type: application/merge-patch+json")
	ns = corev1.Namespace{}
	mustJSON(t, r.body, &ns)
	if diff := cmp.Diff(map[string]string{"kubernetes.io/metadata.name": "team-a", "team": "a"}, ns.Labels); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.FinalizerName{"kubernetes"}, ns.Spec.Finalizers); diff != "" {
		t.Errorf("finalizers (-want,+got):\n%s", diff)
	}
}

func TestNamespaceErrors(t *testing.T) {
	tests := map[string]struct {
		method, path, body string
		wantCode           int
		wantReason         metav1.StatusReason
		wantMessage        string
	}{
		"invalid name": {method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"team.a"}}`,
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
			wantMessage: `Namespace "team.a" is invalid: metadata.name: Invalid value: "team.a": must not contain dots`},
		"duplicate": {method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"default"}}`,
			wantCode: 409, wantReason: metav1.StatusReasonAlreadyExists, wantMessage: `namespaces "default" already exists`},
		"pod in a missing namespace": {method: "POST", path: "/api/v1/namespaces/nope/pods", body: podJSON("p"),
			wantCode: 404, wantReason: metav1.StatusReasonNotFound, wantMessage: `namespaces "nope" not found`},
		"job in a terminating namespace": {method: "POST", path: "/apis/batch/v1/namespaces/leaving/jobs", body: jobJSON("j"),
			wantCode: 403, wantReason: metav1.StatusReasonForbidden,
			wantMessage: `jobs.batch "j" is forbidden: unable to create new content in namespace leaving because it is being terminated`},
		"dry run in a missing namespace": {method: "POST", path: "/api/v1/namespaces/nope/pods?dryRun=All", body: podJSON("p"),
			wantCode: 404, wantReason: metav1.StatusReasonNotFound, wantMessage: `namespaces "nope" not found`},
		"deleting default": {method: "DELETE", path: "/api/v1/namespaces/default",
			wantCode: 403, wantReason: metav1.StatusReasonForbidden, wantMessage: `namespaces "default" is forbidden: this namespace may not be deleted`},
		"deleting a missing namespace": {method: "DELETE", path: "/api/v1/namespaces/nope",
			wantCode: 404, wantReason: metav1.StatusReasonNotFound, wantMessage: `namespaces "nope" not found`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newLifecycleServer(t, "default", "leaving")
			ts.mustDo(t, "DELETE", "/api/v1/namespaces/leaving", "")
			r := ts.do(t, tc.method, tc.path, tc.body)
			st := statusOf(t, r.body)
			got := []any{r.code, st.Reason, st.Message}
			if diff := cmp.Diff([]any{tc.wantCode, tc.wantReason, tc.wantMessage}, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNamespaceDelete(t *testing.T) {
	ts := newLifecycleServer(t, "default", "team-a")
	r := ts.mustDo(t, "DELETE", "/api/v1/namespaces/team-a", `{"propagationPolicy":"Background"}`)
	var ns corev1.Namespace
	mustJSON(t, r.body, &ns)
	if ns.DeletionTimestamp == nil || ns.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("after DELETE: deletionTimestamp %v, phase %q", ns.DeletionTimestamp, ns.Status.Phase)
	}
	// Deleting again changes nothing while the namespace controller works.
	ts.mustDo(t, "DELETE", "/api/v1/namespaces/team-a", "")
	r = ts.mustDo(t, "GET", "/api/v1/namespaces/team-a", "")
	// The namespace controller's last step: the "kubernetes" finalizer goes.
	_, err := ts.store.Modify(db.Namespaces, "", "team-a", func(obj db.Object) error {
		obj.(*corev1.Namespace).Spec.Finalizers = nil
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r = ts.do(t, "GET", "/api/v1/namespaces/team-a", ""); r.code != http.StatusNotFound {
		t.Errorf("after finalization: GET = %d %s", r.code, r.body)
	}
}

func TestNamespaceTable(t *testing.T) {
	ts := newLifecycleServer(t, "default", "kube-system")
	r := ts.mustDo(t, "GET", "/api/v1/namespaces?limit=500", "", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	var table metav1.Table
	mustJSON(t, r.body, &table)
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"Name", "Status", "Age"}, names); diff != "" {
		t.Errorf("columns (-want,+got):\n%s", diff)
	}
	var rows [][]any
	for _, row := range table.Rows {
		rows = append(rows, row.Cells[:2])
	}
	if diff := cmp.Diff([][]any{{"default", "Active"}, {"kube-system", "Active"}}, rows); diff != "" {
		t.Errorf("rows (-want,+got):\n%s", diff)
	}
	var list corev1.NamespaceList
	mustJSON(t, ts.mustDo(t, "GET", "/api/v1/namespaces?fieldSelector=metadata.name%3Dkube-system", "").body, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "kube-system" || list.Kind != "NamespaceList" {
		data, _ := json.Marshal(list)
		t.Errorf("field selector: %s", data)
	}
}
