package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// invalidJob is the 422 Status kube-apiserver answers for Job name.
func invalidJob(name, message string, causes ...metav1.StatusCause) metav1.Status {
	return metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   metav1.StatusReasonInvalid,
		Details:  &metav1.StatusDetails{Name: name, Group: "batch", Kind: "Job", Causes: causes},
		Code:     422,
	}
}

func TestJobValidationStatus(t *testing.T) {
	const (
		merge     = "Content-Type: application/merge-patch+json"
		suspended = `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"s"},"spec":{"suspend":true,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`
	)
	type request struct {
		method, path, body string
		headers            []string
	}
	tests := map[string]struct {
		setup    []request
		req      request
		wantCode int
		want     *metav1.Status // the body when the request fails
	}{
		"create: every violation is a cause": {
			req: request{"POST", jobsPath, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"a"},"spec":{
				"podFailurePolicy":{"rules":[{"action":"FailJob","onExitCodes":{"operator":"In","values":[0]}}]},
				"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`, nil},
			wantCode: 422,
			want: ptrTo(invalidJob("a", `Job.batch "a" is invalid: [spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator, spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified]`,
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "spec.podFailurePolicy.rules[0].onExitCodes.values[0]",
					Message: "Invalid value: 0: must not be 0 for the In operator"},
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "spec.template.spec.restartPolicy",
					Message: `Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified`},
			)),
		},
		"create: Indexed without completions": {
			req: request{"POST", jobsPath, `{"metadata":{"name":"a"},"spec":{"completionMode":"Indexed","parallelism":2,
				"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`, nil},
			wantCode: 422,
			want: ptrTo(invalidJob("a", `Job.batch "a" is invalid: spec.completions: Required value: when completion mode is Indexed`,
				metav1.StatusCause{Type: "FieldValueRequired", Field: "spec.completions", Message: "Required value: when completion mode is Indexed"},
			)),
		},
		"patch: an invalid spec is a cause twice, once in the message": {
			setup:    []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:      request{"PATCH", jobsPath + "/a", `{"spec":{"parallelism":-1}}`, []string{merge}},
			wantCode: 422,
			want: ptrTo(invalidJob("a", `Job.batch "a" is invalid: spec.parallelism: Invalid value: -1: must be greater than or equal to 0`,
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "spec.parallelism", Message: "Invalid value: -1: must be greater than or equal to 0"},
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "spec.parallelism", Message: "Invalid value: -1: must be greater than or equal to 0"},
			)),
		},
		"patch: completions are immutable": {
			setup:    []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:      request{"PATCH", jobsPath + "/a", `{"spec":{"completions":3}}`, []string{merge}},
			wantCode: 422,
			want: ptrTo(invalidJob("a", `Job.batch "a" is invalid: spec.completions: Invalid value: 3: field is immutable`,
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "spec.completions", Message: "Invalid value: 3: field is immutable"},
			)),
		},
		"patch: managedBy is immutable": {
			setup:    []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:      request{"PATCH", jobsPath + "/a", `{"spec":{"managedBy":"example.com/queue"}}`, []string{merge}},
			wantCode: 422,
			want: ptrTo(invalidJob("a", `Job.batch "a" is invalid: spec.managedBy: Invalid value: "example.com/queue": field is immutable`,
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "spec.managedBy", Message: `Invalid value: "example.com/queue": field is immutable`},
			)),
		},
		"status patch: negative counter and an unparsable index set (issue 16)": {
			setup:    []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:      request{"PATCH", jobsPath + "/a/status", `{"status":{"succeeded":-5,"completedIndexes":"zz"}}`, []string{merge}},
			wantCode: 422,
			want: ptrTo(invalidJob("a", `Job.batch "a" is invalid: [status.succeeded: Invalid value: -5: must be greater than or equal to 0, status.completedIndexes: Invalid value: "zz": error parsing completedIndexes: cannot convert string to integer for index: "zz", status.completedIndexes: Invalid value: "zz": cannot set non-empty completedIndexes when non-indexed completion mode, status.succeeded: Invalid value: -5: cannot decrease the succeeded counter]`,
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "status.succeeded", Message: "Invalid value: -5: must be greater than or equal to 0"},
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "status.completedIndexes", Message: `Invalid value: "zz": error parsing completedIndexes: cannot convert string to integer for index: "zz"`},
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "status.completedIndexes", Message: `Invalid value: "zz": cannot set non-empty completedIndexes when non-indexed completion mode`},
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "status.succeeded", Message: "Invalid value: -5: cannot decrease the succeeded counter"},
			)),
		},
		"status patch: Complete without its pair and completion time": {
			setup: []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req: request{"PATCH", jobsPath + "/a/status", `{"status":{"startTime":"2026-01-01T00:00:00Z","conditions":[{"type":"Complete","status":"True"}]}}`,
				[]string{merge}},
			wantCode: 422,
			want: ptrTo(invalidJob("a", `Job.batch "a" is invalid: [status.completionTime: Required value: completionTime is required for Complete jobs, status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition]`,
				metav1.StatusCause{Type: "FieldValueRequired", Field: "status.completionTime", Message: "Required value: completionTime is required for Complete jobs"},
				metav1.StatusCause{Type: "FieldValueInvalid", Field: "status.conditions", Message: "Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition"},
			)),
		},
		"status patch: a valid status is stored": {
			setup:    []request{{"POST", jobsPath, jobJSON("a"), nil}},
			req:      request{"PATCH", jobsPath + "/a/status", `{"status":{"active":1,"ready":1,"startTime":"2026-01-01T00:00:00Z"}}`, []string{merge}},
			wantCode: 200,
		},
		"patch: a suspended Job that never started may move": {
			setup:    []request{{"POST", jobsPath, suspended, nil}},
			req:      request{"PATCH", jobsPath + "/s", `{"spec":{"template":{"spec":{"nodeSelector":{"disk":"ssd"}}}}}`, []string{merge}},
			wantCode: 200,
		},
		"patch: elastic Indexed job": {
			setup: []request{{"POST", jobsPath, `{"metadata":{"name":"e"},"spec":{"completionMode":"Indexed","completions":2,"parallelism":2,
				"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`, nil}},
			req:      request{"PATCH", jobsPath + "/e", `{"spec":{"completions":4,"parallelism":4}}`, []string{merge}},
			wantCode: 200,
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
				t.Fatalf("code %d, want %d: %s", r.code, tc.wantCode, r.body)
			}
			if tc.want == nil {
				return
			}
			if diff := cmp.Diff(*tc.want, statusOf(t, r.body)); diff != "" {
				t.Errorf("Status (-want,+got):\n%s", diff)
			}
		})
	}
}
