package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// labeledJob is jobJSON with the label team.
func labeledJob(name, team string) string {
	return strings.Replace(jobJSON(name), `"name":"`+name+`"`, `"name":"`+name+`","labels":{"team":"`+team+`"}`, 1)
}

// storedNames are the names of the stored objects of r in namespace default.
func storedNames(t *testing.T, ts *testServer, r db.Resource) []string {
	t.Helper()
	objs, _, err := ts.store.List(r, "default", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestDeleteCollection(t *testing.T) {
	tests := map[string]struct {
		query, body string
		wantListed  []string
		wantLeft    []string
	}{
		"label selector":  {query: "?labelSelector=team%3Dx", wantListed: []string{"a", "b"}, wantLeft: []string{"c"}},
		"field selector":  {query: "?fieldSelector=metadata.name%3Dc", wantListed: []string{"c"}, wantLeft: []string{"a", "b"}},
		"everything":      {wantListed: []string{"a", "b", "c"}, wantLeft: []string{}},
		"dry run":         {query: "?dryRun=All", wantListed: []string{"a", "b", "c"}, wantLeft: []string{"a", "b", "c"}},
		"dry run in body": {body: `{"dryRun":["All"]}`, wantListed: []string{"a", "b", "c"}, wantLeft: []string{"a", "b", "c"}},
		"nothing matches": {query: "?labelSelector=team%3Dnone", wantListed: []string{}, wantLeft: []string{"a", "b", "c"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			ts.mustDo(t, "POST", jobsPath, labeledJob("a", "x"))
			ts.mustDo(t, "POST", jobsPath, labeledJob("b", "x"))
			ts.mustDo(t, "POST", jobsPath, labeledJob("c", "y"))
			ts.mustDo(t, "POST", "/apis/batch/v1/namespaces/other/jobs", labeledJob("a", "x"))
			r := ts.mustDo(t, "DELETE", jobsPath+tc.query, tc.body)
			var list batchv1.JobList
			if err := json.Unmarshal([]byte(r.body), &list); err != nil || list.Kind != "JobList" {
				t.Fatalf("response is not a JobList: %s", r.body)
			}
			listed := []string{}
			for _, j := range list.Items {
				listed = append(listed, j.Name)
			}
			if diff := cmp.Diff(tc.wantListed, listed); diff != "" {
				t.Errorf("listed (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLeft, storedNames(t, ts, db.Jobs)); diff != "" {
				t.Errorf("left (-want +got):\n%s", diff)
			}
			if _, err := ts.store.Get(db.Jobs, "other", "a"); err != nil {
				t.Errorf("a job of another namespace was deleted: %v", err)
			}
		})
	}
}

func TestDeleteCollectionOfPods(t *testing.T) {
	ts := newTestServer(t)
	for _, p := range []*corev1.Pod{
		selectorPod("default", "running", nil, nil),
		selectorPod("default", "done", nil, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
	} {
		if err := ts.store.Create(db.Pods, p); err != nil {
			t.Fatal(err)
		}
	}
	ts.mustDo(t, "DELETE", podsPath, "")
	// The running pod is deleted gracefully, the finished one at once.
	if diff := cmp.Diff([]string{"running"}, storedNames(t, ts, db.Pods)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if p, err := ts.store.Get(db.Pods, "default", "running"); err != nil || p.GetDeletionTimestamp() == nil {
		t.Errorf("running pod not marked for deletion: %v", err)
	}
	// gracePeriodSeconds=0 from the query finishes it.
	ts.mustDo(t, "DELETE", podsPath+"?gracePeriodSeconds=0", "")
	if diff := cmp.Diff([]string{}, storedNames(t, ts, db.Pods)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDeleteCollectionErrors(t *testing.T) {
	tests := map[string]struct {
		path     string
		body     string
		wantCode int
		wantMsg  string
	}{
		"across namespaces":    {path: "/api/v1/pods", wantCode: 405},
		"namespaces":           {path: "/api/v1/namespaces", wantCode: 405},
		"bad selector":         {path: jobsPath + "?labelSelector=a+in+(b", wantCode: 400},
		"unsupported field":    {path: jobsPath + "?fieldSelector=spec.x%3Dy", wantCode: 400, wantMsg: "field label not supported: spec.x"},
		"bad propagation":      {path: jobsPath, body: `{"propagationPolicy":"Up"}`, wantCode: 422},
		"uid precondition":     {path: jobsPath, body: `{"preconditions":{"uid":"nope"}}`, wantCode: 409, wantMsg: "Precondition failed: UID in precondition: nope"},
		"sendInitialEvents":    {path: jobsPath + "?sendInitialEvents=true", wantCode: 422},
		"bad resourceVersion":  {path: jobsPath + "?resourceVersion=x", wantCode: 400},
		"malformed body":       {path: jobsPath, body: `[`, wantCode: 400},
		"unknown content type": {path: jobsPath, body: `x`, wantCode: 415},
	}
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			headers := []string{}
			if name == "unknown content type" {
				headers = append(headers, "Content-Type: text/plain")
			}
			r := ts.do(t, "DELETE", tc.path, tc.body, headers...)
			if r.code != tc.wantCode || !strings.Contains(r.body, tc.wantMsg) {
				t.Errorf("got %d %s, want %d %q", r.code, r.body, tc.wantCode, tc.wantMsg)
			}
		})
	}
	if diff := cmp.Diff([]string{"a"}, storedNames(t, ts, db.Jobs)); diff != "" {
		t.Errorf("a failed deletecollection deleted something (-want +got):\n%s", diff)
	}
}

func TestJobFinalizers(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, strings.Replace(jobJSON("a"), `"name":"a"`, `"name":"a","finalizers":["example.com/hold"]`, 1))
	// A Job with a finalizer is marked, not removed.
	r := ts.mustDo(t, "DELETE", jobsPath+"/a", `{"propagationPolicy":"Background"}`)
	job := decodeJob(t, r.body)
	if job.DeletionTimestamp == nil || job.DeletionGracePeriodSeconds == nil || *job.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("deleted job with a finalizer: %s", r.body)
	}
	got := decodeJob(t, ts.mustDo(t, "GET", jobsPath+"/a", "").body)
	if got.DeletionTimestamp == nil {
		t.Fatal("the stored job is not marked")
	}
	// No new finalizer on an object being deleted; the deletionTimestamp stays.
	r = ts.do(t, "PATCH", jobsPath+"/a", `{"metadata":{"finalizers":["example.com/hold","example.com/more"],"deletionTimestamp":null}}`, mergePatch)
	if st := statusOf(t, r.body); r.code != 422 || !strings.Contains(st.Message, "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted") {
		t.Errorf("adding a finalizer while deleting: %d %s", r.code, r.body)
	}
	r = ts.mustDo(t, "PATCH", jobsPath+"/a", `{"metadata":{"deletionTimestamp":null,"labels":{"x":"y"}}}`, mergePatch)
	if decodeJob(t, r.body).DeletionTimestamp == nil {
		t.Errorf("an update removed the deletionTimestamp: %s", r.body)
	}
	// Removing the last finalizer removes the job.
	ts.mustDo(t, "PATCH", jobsPath+"/a", `[{"op":"remove","path":"/metadata/finalizers"}]`, "Content-Type: application/json-patch+json")
	if r := ts.do(t, "GET", jobsPath+"/a", ""); r.code != 404 {
		t.Errorf("job still there after its last finalizer went: %d %s", r.code, r.body)
	}
}

func TestDeleteDryRun(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	for _, req := range []struct{ path, body string }{
		{jobsPath + "/a?dryRun=All", ""},
		{jobsPath + "/a", `{"dryRun":["All"],"propagationPolicy":"Foreground"}`},
	} {
		r := ts.mustDo(t, "DELETE", req.path, req.body)
		if got := decodeJob(t, r.body); got.Name != "a" {
			t.Errorf("dry-run delete answered %s", r.body)
		}
		stored := storedJob(t, ts, "a")
		if stored.DeletionTimestamp != nil || len(stored.Finalizers) != 0 {
			t.Errorf("dry-run delete changed the job: %+v", stored.ObjectMeta)
		}
	}
}

func TestUpdatePreconditions(t *testing.T) {
	ts := newTestServer(t)
	job := decodeJob(t, ts.mustDo(t, "POST", jobsPath, jobJSON("a")).body)
	stale := job.DeepCopy()
	ts.mustDo(t, "PATCH", jobsPath+"/a", `{"metadata":{"labels":{"x":"y"}}}`, mergePatch)
	stale.Labels = map[string]string{"x": "z"}
	data, _ := json.Marshal(stale)
	r := ts.do(t, "PUT", jobsPath+"/a", string(data))
	st := statusOf(t, r.body)
	want := `Operation cannot be fulfilled on jobs.batch "a": the object has been modified; please apply your changes to the latest version and try again`
	if r.code != 409 || st.Reason != metav1.StatusReasonConflict || st.Message != want {
		t.Errorf("stale PUT: %d %s %q", r.code, st.Reason, st.Message)
	}
	// A merge patch carrying a stale resourceVersion is refused too.
	r = ts.do(t, "PATCH", jobsPath+"/a", `{"metadata":{"resourceVersion":"`+job.ResourceVersion+`"}}`, mergePatch)
	if r.code != 409 {
		t.Errorf("stale patch: %d %s", r.code, r.body)
	}
	// A PUT without resourceVersion is unconditional.
	stale.ResourceVersion = ""
	data, _ = json.Marshal(stale)
	if r := ts.do(t, "PUT", jobsPath+"/a", string(data)); r.code != 200 || decodeJob(t, r.body).Labels["x"] != "z" {
		t.Errorf("unconditional PUT: %d %s", r.code, r.body)
	}
}

func TestDeletePendingWithCascadeIsAccepted(t *testing.T) {
	ts := newTestServer(t)
	for _, name := range []string{"a", "b"} {
		ts.mustDo(t, "POST", jobsPath, strings.Replace(jobJSON(name), `"name":"`+name+`"`, `"name":"`+name+`","finalizers":["example.com/hold"]`, 1))
	}
	if r := ts.do(t, "DELETE", jobsPath+"/a", `{"orphanDependents":false}`); r.code != 202 {
		t.Errorf("pending deletion with orphanDependents=false: %d, want 202", r.code)
	}
	if r := ts.do(t, "DELETE", jobsPath+"/b", `{"propagationPolicy":"Background"}`); r.code != 200 {
		t.Errorf("pending deletion: %d, want 200", r.code)
	}
}
