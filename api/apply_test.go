package api

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

const applyType = "Content-Type: application/apply-patch+yaml"

// applyJobYAML is an applied configuration of Job name with parallelism p
// and, if not empty, a label team.
func applyJobYAML(name, p, team string) string {
	labels := ""
	if team != "" {
		labels = "\n  labels:\n    team: " + team
	}
	return `apiVersion: batch/v1
kind: Job
metadata:
  name: ` + name + labels + `
spec:
  parallelism: ` + p + `
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox:1.35
`
}

// managers summarizes managedFields as "manager/operation[/subresource]".
func managers(entries []metav1.ManagedFieldsEntry) []string {
	out := []string{}
	for _, e := range entries {
		s := e.Manager + "/" + string(e.Operation)
		if e.Subresource != "" {
			s += "/" + e.Subresource
		}
		out = append(out, s)
	}
	return out
}

func storedJob(t *testing.T, ts *testServer, name string) *batchv1.Job {
	t.Helper()
	obj, err := ts.store.Get(db.Jobs, "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*batchv1.Job)
}

func TestApplyCreatesThenUpdates(t *testing.T) {
	ts := newTestServer(t)
	path := jobsPath + "/a?fieldManager=kubectl"
	r := ts.do(t, "PATCH", path, applyJobYAML("a", "2", "x"), applyType)
	if r.code != 201 {
		t.Fatalf("first apply: %d %s", r.code, r.body)
	}
	job := storedJob(t, ts, "a")
	if *job.Spec.Parallelism != 2 || job.Labels["team"] != "x" || *job.Spec.BackoffLimit != 6 {
		t.Errorf("created job: parallelism %d, labels %v, backoffLimit %d", *job.Spec.Parallelism, job.Labels, *job.Spec.BackoffLimit)
	}
	if diff := cmp.Diff([]string{"kubectl/Apply"}, managers(job.ManagedFields)); diff != "" {
		t.Errorf("managers (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(job.ManagedFields[0].FieldsV1.Raw), `"f:parallelism"`) {
		t.Errorf("apply does not own parallelism: %s", job.ManagedFields[0].FieldsV1.Raw)
	}

	// The same configuration again changes nothing.
	rv := job.ResourceVersion
	if r := ts.do(t, "PATCH", path, applyJobYAML("a", "2", "x"), applyType); r.code != 200 {
		t.Fatalf("second apply: %d %s", r.code, r.body)
	}
	if got := storedJob(t, ts, "a").ResourceVersion; got != rv {
		t.Errorf("an unchanged apply wrote: resourceVersion %s → %s", rv, got)
	}

	// A changed configuration: a new value, and a field it no longer sets is removed.
	if r := ts.do(t, "PATCH", path, applyJobYAML("a", "3", ""), applyType); r.code != 200 {
		t.Fatalf("third apply: %d %s", r.code, r.body)
	}
	job = storedJob(t, ts, "a")
	if *job.Spec.Parallelism != 3 || job.Labels["team"] != "" || job.Generation != 2 {
		t.Errorf("applied change: parallelism %d, labels %v, generation %d", *job.Spec.Parallelism, job.Labels, job.Generation)
	}
	if job.Labels["batch.kubernetes.io/job-name"] != "a" {
		t.Errorf("apply removed the labels nobody applied: %v", job.Labels)
	}
}

func TestApplyConflicts(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath+"?fieldManager=creator", jobJSON("a"))
	ts.mustDo(t, "PATCH", jobsPath+"/a?fieldManager=tuner", `{"spec":{"parallelism":4}}`, mergePatch)

	r := ts.do(t, "PATCH", jobsPath+"/a?fieldManager=kubectl", applyJobYAML("a", "2", ""), applyType)
	st := statusOf(t, r.body)
	if r.code != 409 || st.Reason != metav1.StatusReasonConflict ||
		st.Message != `Apply failed with 1 conflict: conflict with "tuner" using batch/v1: .spec.parallelism` {
		t.Fatalf("got %d %s %q", r.code, st.Reason, st.Message)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != ".spec.parallelism" {
		t.Errorf("conflict details %+v", st.Details)
	}
	// Same values as the other managers: no conflict, shared ownership.
	if r := ts.do(t, "PATCH", jobsPath+"/a?fieldManager=kubectl", applyJobYAML("a", "4", ""), applyType); r.code != 200 {
		t.Fatalf("apply of the same value: %d %s", r.code, r.body)
	}
	// force takes the field over.
	if r := ts.do(t, "PATCH", jobsPath+"/a?fieldManager=kubectl&force=true", applyJobYAML("a", "2", ""), applyType); r.code != 200 {
		t.Fatalf("forced apply: %d %s", r.code, r.body)
	}
	job := storedJob(t, ts, "a")
	if *job.Spec.Parallelism != 2 {
		t.Errorf("forced apply: parallelism %d", *job.Spec.Parallelism)
	}
	if diff := cmp.Diff([]string{"kubectl/Apply", "creator/Update"}, managers(job.ManagedFields)); diff != "" {
		t.Errorf("managers (-want +got):\n%s", diff)
	}
}

func TestApplyErrors(t *testing.T) {
	tests := map[string]struct {
		path, body string
		headers    []string
		wantCode   int
		wantReason metav1.StatusReason
		wantMsg    string
	}{
		"no field manager": {path: jobsPath + "/a", body: applyJobYAML("a", "1", ""), wantCode: 422, wantReason: metav1.StatusReasonInvalid,
			wantMsg: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		"force on a merge patch": {path: jobsPath + "/a?force=true", body: `{}`, headers: []string{mergePatch}, wantCode: 422,
			wantMsg: "force: Forbidden: may not be specified for non-apply patch"},
		"field manager too long": {path: jobsPath + "/a?fieldManager=" + strings.Repeat("m", 129), body: applyJobYAML("a", "1", ""), wantCode: 422,
			wantMsg: "fieldManager: Too long"},
		"unknown field": {path: jobsPath + "/a?fieldManager=m", body: strings.Replace(applyJobYAML("a", "1", ""), "spec:\n", "spec:\n  foo: 1\n", 1),
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMsg: ".spec.foo: field not declared in schema"},
		"duplicate field, strict": {path: jobsPath + "/a?fieldManager=m&fieldValidation=Strict", body: strings.Replace(applyJobYAML("a", "1", ""), "spec:\n", "spec:\n  parallelism: 2\n", 1),
			wantCode: 400, wantMsg: `error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:`},
		"not YAML": {path: jobsPath + "/a?fieldManager=m", body: "{", wantCode: 400, wantMsg: "error decoding YAML"},
		"wrong kind": {path: jobsPath + "/a?fieldManager=m", body: strings.Replace(applyJobYAML("a", "1", ""), "kind: Job", "kind: Pod", 1),
			wantCode: 400, wantMsg: "invalid object type"},
		"wrong name": {path: jobsPath + "/b?fieldManager=m", body: applyJobYAML("a", "1", ""), wantCode: 400,
			wantMsg: "the name of the object (a) does not match the name on the URL (b)"},
		"wrong namespace": {path: jobsPath + "/a?fieldManager=m", body: strings.Replace(applyJobYAML("a", "1", ""), "name: a", "name: a\n  namespace: other", 1),
			wantCode: 400, wantMsg: "the namespace of the object (other) does not match the namespace on the request (default)"},
		"status of a missing object": {path: jobsPath + "/a/status?fieldManager=m", body: applyJobYAML("a", "1", ""), wantCode: 404},
		"invalid job": {path: jobsPath + "/a?fieldManager=m", body: strings.Replace(applyJobYAML("a", "1", ""), "Never", "Always", 1),
			wantCode: 422, wantMsg: `Job.batch "a" is invalid: spec.template.spec.restartPolicy`},
		"wrong type":         {path: jobsPath + "/a?fieldManager=m", body: strings.Replace(applyJobYAML("a", "1", ""), "parallelism: 1", `parallelism: "x"`, 1), wantCode: 400, wantMsg: ".spec.parallelism: expected numeric"},
		"not an int32":       {path: jobsPath + "/a?fieldManager=m", body: strings.Replace(applyJobYAML("a", "1", ""), "parallelism: 1", "parallelism: 1.5", 1), wantCode: 400, wantMsg: "failed to convert new object"},
		"bad timestamp":      {path: jobsPath + "/a?fieldManager=m", body: strings.Replace(applyJobYAML("a", "1", ""), "name: a", "name: a\n  creationTimestamp: yesterday", 1), wantCode: 400},
		"number label":       {path: jobsPath + "/a?fieldManager=m", body: strings.Replace(applyJobYAML("a", "1", ""), "name: a", "name: a\n  labels: {x: 1}", 1), wantCode: 400, wantMsg: ".metadata.labels.x: expected string"},
		"managedFields":      {path: jobsPath + "/a?fieldManager=m", body: strings.Replace(applyJobYAML("a", "1", ""), "name: a", "name: a\n  managedFields: [{manager: x}]", 1), wantCode: 400, wantMsg: "metadata.managedFields must be nil"},
		"null":               {path: jobsPath + "/a?fieldManager=m", body: "null", wantCode: 400, wantMsg: "invalid object type"},
		"a list":             {path: jobsPath + "/a?fieldManager=m", body: "- a\n- b\n", wantCode: 400, wantMsg: "error decoding YAML"},
		"duplicate list key": {path: jobsPath + "/a?fieldManager=m", body: strings.Replace(applyJobYAML("a", "1", ""), "      - name: c\n", "      - name: c\n      - name: c\n", 1), wantCode: 400, wantMsg: "duplicate entries for key [name=\"c\"]"},
		"cbor": {path: jobsPath + "/a?fieldManager=m", body: "x", headers: []string{"Content-Type: application/apply-patch+cbor"}, wantCode: 415,
			wantReason: metav1.StatusReasonUnsupportedMediaType},
	}
	ts := newTestServer(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			headers := tc.headers
			if headers == nil {
				headers = []string{applyType}
			}
			r := ts.do(t, "PATCH", tc.path, tc.body, headers...)
			st := statusOf(t, r.body)
			if r.code != tc.wantCode || (tc.wantReason != "" && st.Reason != tc.wantReason) || !strings.Contains(st.Message, tc.wantMsg) {
				t.Errorf("got %d %s %q, want %d %s %q", r.code, st.Reason, st.Message, tc.wantCode, tc.wantReason, tc.wantMsg)
			}
			if _, err := ts.store.Get(db.Jobs, "default", "a"); err == nil {
				t.Errorf("a failed apply stored the job")
			}
		})
	}
}

func TestApplyWarnsOfDuplicates(t *testing.T) {
	ts := newTestServer(t)
	body := strings.Replace(applyJobYAML("a", "1", ""), "spec:\n", "spec:\n  parallelism: 2\n", 1)
	r := ts.do(t, "PATCH", jobsPath+"/a?fieldManager=m", body, applyType)
	if r.code != 201 || !strings.Contains(r.header.Get("Warning"), `key \"parallelism\" already set in map`) {
		t.Errorf("got %d, Warning %q", r.code, r.header.Get("Warning"))
	}
}

func TestApplyStatusAndDryRun(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "PATCH", jobsPath+"/a?fieldManager=kubectl", applyJobYAML("a", "1", ""), applyType)
	status := "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: a\nstatus:\n  active: 1\nspec:\n  parallelism: 9\n"
	if r := ts.do(t, "PATCH", jobsPath+"/a/status?fieldManager=controller", status, applyType); r.code != 200 {
		t.Fatalf("status apply: %d %s", r.code, r.body)
	}
	job := storedJob(t, ts, "a")
	if job.Status.Active != 1 || *job.Spec.Parallelism != 1 {
		t.Errorf("status apply: active %d, parallelism %d (the spec must not change)", job.Status.Active, *job.Spec.Parallelism)
	}
	// NOTE: managedFields are ordered by time before manager name, and the
	// two applies may fall in different seconds: compare as a set.
	mgrs := managers(job.ManagedFields)
	sort.Strings(mgrs)
	if diff := cmp.Diff([]string{"controller/Apply/status", "kubectl/Apply"}, mgrs); diff != "" {
		t.Errorf("managers (-want +got):\n%s", diff)
	}
	// dryRun answers with the result and stores nothing, for an update and for a create.
	r := ts.do(t, "PATCH", jobsPath+"/a?fieldManager=kubectl&dryRun=All", applyJobYAML("a", "5", ""), applyType)
	var got batchv1.Job
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || r.code != 200 || *got.Spec.Parallelism != 5 {
		t.Errorf("dry-run apply: %d %s", r.code, r.body)
	}
	if p := *storedJob(t, ts, "a").Spec.Parallelism; p != 1 {
		t.Errorf("dry-run apply stored parallelism %d", p)
	}
	if r := ts.do(t, "PATCH", jobsPath+"/b?fieldManager=kubectl&dryRun=All", applyJobYAML("b", "5", ""), applyType); r.code != 201 {
		t.Errorf("dry-run apply creating: %d %s", r.code, r.body)
	}
	if _, err := ts.store.Get(db.Jobs, "default", "b"); err == nil {
		t.Errorf("dry-run apply created the job")
	}
}

func TestManagedFieldsOfUpdates(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath+"?fieldManager=kubectl-create", jobJSON("a"))
	// No fieldManager: the user agent up to its first "/".
	ts.mustDo(t, "PATCH", jobsPath+"/a", `{"metadata":{"labels":{"x":"y"}}}`, mergePatch, "User-Agent: curl/8.0")
	ts.mustDo(t, "PATCH", jobsPath+"/a/status", `{"status":{"active":1}}`, mergePatch, "User-Agent: skiff-controller/1 (linux)")
	job := storedJob(t, ts, "a")
	want := []string{"curl/Update", "kubectl-create/Update", "skiff-controller/Update/status"}
	if diff := cmp.Diff(want, managers(job.ManagedFields), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("managers (-want +got):\n%s", diff)
	}
	for _, e := range job.ManagedFields {
		if e.Manager == "kubectl-create" && !strings.Contains(string(e.FieldsV1.Raw), `"f:containers"`) {
			t.Errorf("the creator does not own the containers: %s", e.FieldsV1.Raw)
		}
		if e.Manager == "curl" && string(e.FieldsV1.Raw) != `{"f:metadata":{"f:labels":{"f:x":{}}}}` {
			t.Errorf("curl owns %s", e.FieldsV1.Raw)
		}
	}
	// A PUT that changes nothing keeps the managed fields and writes nothing.
	job.ResourceVersion = ""
	job.ManagedFields = nil
	data, _ := json.Marshal(job)
	rv := storedJob(t, ts, "a").ResourceVersion
	ts.mustDo(t, "PUT", jobsPath+"/a?fieldManager=kubectl-replace", string(data))
	if after := storedJob(t, ts, "a"); after.ResourceVersion != rv || len(after.ManagedFields) != 3 {
		t.Errorf("an unchanged PUT: resourceVersion %s → %s, managers %v", rv, after.ResourceVersion, managers(after.ManagedFields))
	}
}

// TestApplyMergeMarkers checks that apply merges as kube's markers say: a
// container port is keyed by containerPort and protocol (protocol
// defaulting to TCP), and an atomic selector or nodeSelector is owned as a
// whole.
func TestApplyMergeMarkers(t *testing.T) {
	ts := newTestServer(t)
	job := `apiVersion: batch/v1
kind: Job
metadata:
  name: a
spec:
  manualSelector: true
  selector:
    matchLabels:
      app: a
  template:
    metadata:
      labels:
        app: a
    spec:
      restartPolicy: Never
      nodeSelector:
        disk: ssd
      containers:
      - name: c
        image: busybox:1.35
        ports:
        - containerPort: 53
          protocol: UDP
        - containerPort: 53
`
	if r := ts.do(t, "PATCH", jobsPath+"/a?fieldManager=kubectl", job, applyType); r.code != 201 {
		t.Fatalf("apply: %d %s", r.code, r.body)
	}
	stored := storedJob(t, ts, "a")
	var ports []string
	for _, p := range stored.Spec.Template.Spec.Containers[0].Ports {
		ports = append(ports, string(p.Protocol))
	}
	if diff := cmp.Diff([]string{"UDP", "TCP"}, ports); diff != "" {
		t.Errorf("port protocols (-want +got):\n%s", diff)
	}
	fields := string(stored.ManagedFields[0].FieldsV1.Raw)
	tests := []struct {
		name    string
		want    string
		present bool
	}{
		{name: "UDP port keyed by port and protocol", want: `"k:{\"containerPort\":53,\"protocol\":\"UDP\"}"`, present: true},
		{name: "TCP port keyed with the default protocol", want: `"k:{\"containerPort\":53,\"protocol\":\"TCP\"}"`, present: true},
		{name: "selector owned whole", want: `"f:selector":{}`, present: true},
		{name: "no selector member owned", want: `"f:matchLabels"`},
		{name: "nodeSelector owned whole", want: `"f:nodeSelector":{}`, present: true},
		{name: "no nodeSelector key owned", want: `"f:disk"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Contains(fields, tt.want); got != tt.present {
				t.Errorf("%s in managedFields: %v, want %v\n%s", tt.want, got, tt.present, fields)
			}
		})
	}
}
