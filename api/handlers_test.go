package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
)

const (
	jobsPath = "/apis/batch/v1/namespaces/default/jobs"
	podsPath = "/api/v1/namespaces/default/pods"
)

// jobJSON is a valid Job named name.
func jobJSON(name string) string {
	return `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`
}

// podJSON is a valid Pod named name.
func podJSON(name string) string {
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","image":"busybox:1.35"}]}}`
}

// statusOf decodes a Status body.
func statusOf(t *testing.T, body string) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("decoding Status %q: %v", body, err)
	}
	return st
}

func TestHandlerStatusCodes(t *testing.T) {
	type request struct {
		method, path, body string
		headers            []string
	}
	tests := map[string]struct {
		setup      []request
		req        request
		wantCode   int
		wantReason metav1.StatusReason
		wantMsg    string // substring of the Status message
	}{
		"create job": {
			req: request{"POST", jobsPath, jobJSON("a"), nil}, wantCode: 201,
		},
		"create job from YAML": {
			req: request{"POST", jobsPath, "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: yaml\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n",
				[]string{"Content-Type: application/yaml"}},
			wantCode: 201,
		},
		"create without kind takes the endpoint's": {
			req: request{"POST", jobsPath, `{"metadata":{"name":"nokind"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"b"}]}}}}`, nil}, wantCode: 201,
		},
		"duplicate name": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"POST", jobsPath, jobJSON("a"), nil}, wantCode: 409, wantReason: metav1.StatusReasonAlreadyExists,
			wantMsg: `jobs.batch "a" already exists`,
		},
		"invalid job": {
			req:      request{"POST", jobsPath, strings.Replace(jobJSON("a"), "Never", "Always", 1), nil},
			wantCode: 422, wantReason: metav1.StatusReasonInvalid,
			wantMsg: `Job.batch "a" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`,
		},
		"malformed body": {
			req: request{"POST", jobsPath, `{"metadata":`, nil}, wantCode: 400, wantReason: metav1.StatusReasonBadRequest,
		},
		"wrong kind": {
			req:      request{"POST", jobsPath, strings.Replace(jobJSON("a"), `"kind":"Job"`, `"kind":"Pod"`, 1), nil},
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMsg: "kind",
		},
		"wrong apiVersion": {
			req:      request{"POST", jobsPath, strings.Replace(jobJSON("a"), `batch/v1`, `v1`, 1), nil},
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest, wantMsg: "API version",
		},
		"namespace mismatch": {
			req:      request{"POST", jobsPath, strings.Replace(jobJSON("a"), `"name":"a"`, `"name":"a","namespace":"other"`, 1), nil},
			wantCode: 400, wantMsg: "the namespace of the provided object does not match the namespace sent on the request",
		},
		"unsupported media type": {
			req:      request{"POST", jobsPath, jobJSON("a"), []string{"Content-Type: text/plain"}},
			wantCode: 415, wantReason: metav1.StatusReasonUnsupportedMediaType,
		},
		"protobuf that is not": {
			req:      request{"POST", jobsPath, jobJSON("a"), []string{"Content-Type: application/vnd.kubernetes.protobuf"}},
			wantCode: 400, wantReason: metav1.StatusReasonBadRequest,
		},
		"body too large": {
			req:      request{"POST", jobsPath, `{"metadata":{"name":"` + strings.Repeat("a", maxBodyBytes) + `"}}`, nil},
			wantCode: 413, wantReason: metav1.StatusReasonRequestEntityTooLarge,
		},
		"strict unknown field": {
			req:      request{"POST", jobsPath + "?fieldValidation=Strict", strings.Replace(jobJSON("a"), `"spec":{`, `"spec":{"foo":1,`, 1), nil},
			wantCode: 400, wantMsg: `strict decoding error: unknown field "spec.foo"`,
		},
		"strict duplicate field": {
			req:      request{"POST", jobsPath + "?fieldValidation=Strict", strings.Replace(jobJSON("a"), `"kind":"Job"`, `"kind":"Job","kind":"Job"`, 1), nil},
			wantCode: 400, wantMsg: `duplicate field "kind"`,
		},
		"ignore unknown field": {
			req:      request{"POST", jobsPath + "?fieldValidation=Ignore", strings.Replace(jobJSON("a"), `"spec":{`, `"spec":{"foo":1,`, 1), nil},
			wantCode: 201,
		},
		"bad fieldValidation": {
			req: request{"POST", jobsPath + "?fieldValidation=Loud", jobJSON("a"), nil}, wantCode: 422, wantReason: metav1.StatusReasonInvalid,
			wantMsg: `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud"`,
		},
		"bad dryRun": {
			req: request{"POST", jobsPath + "?dryRun=Some", jobJSON("a"), nil}, wantCode: 422, wantReason: metav1.StatusReasonInvalid,
			wantMsg: `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`,
		},
		"get missing": {
			req: request{"GET", jobsPath + "/nope", "", nil}, wantCode: 404, wantReason: metav1.StatusReasonNotFound,
			wantMsg: `jobs.batch "nope" not found`,
		},
		"get a name no object can have": {
			req: request{"GET", jobsPath + "/a%00b", "", nil}, wantCode: 404, wantReason: metav1.StatusReasonNotFound,
		},
		"get missing pod": {
			req: request{"GET", podsPath + "/nope", "", nil}, wantCode: 404, wantMsg: `pods "nope" not found`,
		},
		"wrong method": {
			req: request{"POST", jobsPath + "/a", jobJSON("a"), nil}, wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed,
		},
		"wrong method on status": {
			req: request{"DELETE", jobsPath + "/a/status", "", nil}, wantCode: 405,
		},
		"unknown path": {
			req: request{"GET", "/apis/apps/v1/statefulsets", "", nil}, wantCode: 404, wantReason: metav1.StatusReasonNotFound,
		},
		"bad label selector": {
			req: request{"GET", jobsPath + "?labelSelector=a%3D%3D%3Db", "", nil}, wantCode: 400,
		},
		"unsupported field selector": {
			req: request{"GET", jobsPath + "?fieldSelector=spec.foo%3Db", "", nil}, wantCode: 400,
			wantMsg: "field label not supported: spec.foo",
		},
		"bad limit": {
			req: request{"GET", jobsPath + "?limit=x", "", nil}, wantCode: 400,
		},
		"bad continue": {
			req: request{"GET", jobsPath + "?continue=!!!", "", nil}, wantCode: 400,
		},
		"bad resourceVersion": {
			req: request{"GET", jobsPath + "?resourceVersion=x", "", nil}, wantCode: 400,
		},
		"put name mismatch": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"PUT", jobsPath + "/a", jobJSON("b"), nil}, wantCode: 400,
			wantMsg: "does not match the name on the URL",
		},
		"put missing": {
			req: request{"PUT", jobsPath + "/a", jobJSON("a"), nil}, wantCode: 404,
		},
		"put stale resourceVersion": {
			setup:    []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:      request{"PUT", jobsPath + "/a", strings.Replace(jobJSON("a"), `"name":"a"`, `"name":"a","resourceVersion":"999"`, 1), nil},
			wantCode: 409, wantReason: metav1.StatusReasonConflict,
		},
		"patch unsupported type": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"PATCH", jobsPath + "/a", `{}`, []string{"Content-Type: application/json"}}, wantCode: 415,
		},
		"patch malformed": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"PATCH", jobsPath + "/a", `{`, []string{"Content-Type: application/merge-patch+json"}}, wantCode: 400,
		},
		"json patch test fails": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req: request{"PATCH", jobsPath + "/a", `[{"op":"test","path":"/spec/parallelism","value":5}]`,
				[]string{"Content-Type: application/json-patch+json"}},
			wantCode: 422,
		},
		"patch immutable selector": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req: request{"PATCH", jobsPath + "/a", `{"spec":{"selector":{"matchLabels":{"x":"y"}}}}`,
				[]string{"Content-Type: application/merge-patch+json"}},
			wantCode: 422, wantMsg: "field is immutable",
		},
		"patch missing": {
			req: request{"PATCH", jobsPath + "/a", `{}`, []string{"Content-Type: application/merge-patch+json"}}, wantCode: 404,
		},
		"delete missing": {
			req: request{"DELETE", jobsPath + "/a", "", nil}, wantCode: 404,
		},
		"delete bad propagation": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"DELETE", jobsPath + "/a", `{"propagationPolicy":"Sideways"}`, nil}, wantCode: 422,
			wantMsg: `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways"`,
		},
		"delete bad propagation in the query": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"DELETE", jobsPath + "/a?propagationPolicy=Sideways", "", nil}, wantCode: 422,
		},
		"delete orphan and propagation": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"DELETE", jobsPath + "/a", `{"propagationPolicy":"Orphan","orphanDependents":true}`, nil}, wantCode: 422,
			wantMsg: "orphanDependents and deletionPropagation cannot be both set",
		},
		"delete bad grace period": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"DELETE", jobsPath + "/a?gracePeriodSeconds=soon", "", nil}, wantCode: 400, wantReason: metav1.StatusReasonBadRequest,
		},
		"delete bad dryRun": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"DELETE", jobsPath + "/a?dryRun=Yes", "", nil}, wantCode: 422,
		},
		"delete body not JSON": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"DELETE", jobsPath + "/a", `{"propagationPolicy":`, nil}, wantCode: 400,
		},
		"delete uid precondition": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"DELETE", jobsPath + "/a", `{"preconditions":{"uid":"nope"}}`, nil}, wantCode: 409,
			wantMsg: "Precondition failed: UID in precondition: nope",
		},
		"delete rv precondition": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:   request{"DELETE", jobsPath + "/a", `{"preconditions":{"resourceVersion":"999"}}`, nil}, wantCode: 409,
		},
		"log of missing pod": {
			req: request{"GET", podsPath + "/nope/log", "", nil}, wantCode: 404,
		},
		"openapi v3 unknown group": {
			req: request{"GET", "/openapi/v3/apis/apps/v1", "", nil}, wantCode: 404,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			for _, s := range tc.setup {
				if r := ts.do(t, s.method, s.path, s.body, s.headers...); r.code >= 300 {
					t.Fatalf("setup %s %s: %d %s", s.method, s.path, r.code, r.body)
				}
			}
			r := ts.do(t, tc.req.method, tc.req.path, tc.req.body, tc.req.headers...)
			if r.code != tc.wantCode {
				t.Fatalf("code = %d, want %d; body %s", r.code, tc.wantCode, r.body)
			}
			if r.code < 300 {
				return
			}
			st := statusOf(t, r.body)
			if st.Kind != "Status" || st.APIVersion != "v1" || st.Code != int32(tc.wantCode) || st.Status != metav1.StatusFailure {
				t.Errorf("not a failure Status with code %d: %s", tc.wantCode, r.body)
			}
			if tc.wantReason != "" && st.Reason != tc.wantReason {
				t.Errorf("reason = %q, want %q", st.Reason, tc.wantReason)
			}
			if !strings.Contains(st.Message, tc.wantMsg) {
				t.Errorf("message %q does not contain %q", st.Message, tc.wantMsg)
			}
		})
	}
}

func TestWarnUnknownField(t *testing.T) {
	ts := newTestServer(t)
	body := strings.Replace(jobJSON("a"), `"spec":{`, `"spec":{"foo":1,`, 1)
	for _, q := range []string{"?fieldValidation=Warn", ""} {
		r := ts.do(t, "DELETE", jobsPath+"/a", "")
		_ = r
		r = ts.do(t, "POST", jobsPath+q, body)
		if r.code != 201 {
			t.Fatalf("%q: code %d: %s", q, r.code, r.body)
		}
		if diff := cmp.Diff([]string{`299 - "unknown field \"spec.foo\""`}, r.header.Values("Warning")); diff != "" {
			t.Errorf("%q: Warning headers (-want,+got):\n%s", q, diff)
		}
	}
}

func TestDryRunCreateStoresNothing(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "POST", jobsPath+"?dryRun=All", jobJSON("a"))
	if r.code != 201 {
		t.Fatalf("code %d: %s", r.code, r.body)
	}
	var job batchv1.Job
	if err := json.Unmarshal([]byte(r.body), &job); err != nil {
		t.Fatal(err)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 6 {
		t.Errorf("dry run did not default: %s", r.body)
	}
	if _, err := ts.store.Get(db.Jobs, "default", "a"); err == nil {
		t.Errorf("dry run stored the job")
	}
}

func TestGenerateName(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "POST", jobsPath, strings.Replace(jobJSON(""), `"name":""`, `"generateName":"gen-"`, 1))
	if r.code != 201 {
		t.Fatalf("code %d: %s", r.code, r.body)
	}
	var job batchv1.Job
	if err := json.Unmarshal([]byte(r.body), &job); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(job.Name, "gen-") || len(job.Name) != len("gen-")+5 {
		t.Errorf("name = %q, want gen-xxxxx", job.Name)
	}
	if got := job.Labels[batchv1.JobNameLabel]; got != job.Name {
		t.Errorf("job-name label = %q, want %q", got, job.Name)
	}
}

func TestTypeMetaOnResponses(t *testing.T) {
	ts := newTestServer(t)
	ts.do(t, "POST", jobsPath, jobJSON("a"))
	ts.do(t, "POST", podsPath, podJSON("p"))
	tests := map[string]struct{ path, want string }{
		"job":      {jobsPath + "/a", `"kind":"Job","apiVersion":"batch/v1"`},
		"job list": {jobsPath, `"kind":"JobList","apiVersion":"batch/v1"`},
		"all jobs": {"/apis/batch/v1/jobs", `"kind":"JobList","apiVersion":"batch/v1"`},
		"pod":      {podsPath + "/p", `"kind":"Pod","apiVersion":"v1"`},
		"pods":     {"/api/v1/pods", `"kind":"PodList","apiVersion":"v1"`},
		"status":   {jobsPath + "/a/status", `"kind":"Job","apiVersion":"batch/v1"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, "GET", tc.path, "")
			if r.code != 200 || !strings.Contains(r.body, tc.want) {
				t.Errorf("GET %s = %d %s, want %s", tc.path, r.code, r.body, tc.want)
			}
		})
	}
}

func TestBadInputIsNeverAServerError(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	ts.mustDo(t, "POST", podsPath, podJSON("a"))
	bodies := []string{"", "null", "[]", "{", "0", `"x"`, `{"spec":null}`, `{"metadata":{"name":123}}`, `{"metadata":null,"status":{"phase":1}}`,
		"\x00\x01", `[{"op":"remove","path":"/metadata"}]`, `[{"op":"bogus"}]`, `{"spec":{"template":{"spec":{"containers":[null]}}}}`}
	contentTypes := []string{"application/json", "application/yaml", "application/merge-patch+json",
		"application/strategic-merge-patch+json", "application/json-patch+json"}
	for _, base := range []string{jobsPath, podsPath} {
		for _, req := range [][2]string{{"POST", base}, {"PUT", base + "/a"}, {"PATCH", base + "/a"}, {"DELETE", base + "/a"},
			{"PUT", base + "/a/status"}, {"PATCH", base + "/a/status"}} {
			for _, body := range bodies {
				for _, ct := range contentTypes {
					r := ts.do(t, req[0], req[1]+"?dryRun=All", body, "Content-Type: "+ct)
					if r.code >= 500 {
						t.Errorf("%s %s %s %q: %d %s", req[0], req[1], ct, body, r.code, r.body)
					}
				}
			}
		}
	}
}

func TestCreateFromProtobuf(t *testing.T) {
	ts := newTestServer(t)
	var job batchv1.Job
	mustJSON(t, jobJSON("pb"), &job)
	raw, err := job.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	body := string(append([]byte("k8s\x00"), envelope...))
	r := ts.do(t, "POST", jobsPath, body, "Content-Type: application/vnd.kubernetes.protobuf")
	if r.code != 201 {
		t.Fatalf("code %d: %s", r.code, r.body)
	}
	if got := decodeJob(t, r.body); got.Name != "pb" || got.Spec.Template.Spec.Containers[0].Image != "busybox:1.35" {
		t.Errorf("created %s", r.body)
	}
}
