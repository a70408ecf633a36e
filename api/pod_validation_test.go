package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodCreateRefusesBacksteps is the case: a pod whose hostPath
// or subPath climbs out with '..' is refused with kube's 422.
func TestPodCreateRefusesBacksteps(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "POST", podsPath, `{"metadata":{"name":"p"},"spec":{"restartPolicy":"Never",
		"volumes":[{"name":"h","hostPath":{"path":"../../etc"}},{"name":"e","emptyDir":{}}],
		"containers":[{"name":"c","image":"busybox:1.35","volumeMounts":[{"name":"e","mountPath":"/e","subPath":"../../../../etc"}]}]}}`)
	if r.code != 422 {
		t.Fatalf("code %d, want 422: %s", r.code, r.body)
	}
	want := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  `Pod "p" is invalid: [spec.volumes[0].hostPath.path: Invalid value: "../../etc": must not contain '..', spec.containers[0].volumeMounts.subPath: Invalid value: "../../../../etc": must not contain '..']`,
		Reason:   metav1.StatusReasonInvalid,
		Details: &metav1.StatusDetails{Name: "p", Kind: "Pod", Causes: []metav1.StatusCause{
			{Type: "FieldValueInvalid", Field: "spec.volumes[0].hostPath.path", Message: `Invalid value: "../../etc": must not contain '..'`},
			{Type: "FieldValueInvalid", Field: "spec.containers[0].volumeMounts.subPath", Message: `Invalid value: "../../../../etc": must not contain '..'`},
		}},
		Code: 422,
	}
	if diff := cmp.Diff(want, statusOf(t, r.body)); diff != "" {
		t.Errorf("Status (-want,+got):\n%s", diff)
	}
}

func TestPodStatusValidation(t *testing.T) {
	const merge = "Content-Type: application/merge-patch+json"
	tests := map[string]struct {
		restartPolicy string
		first, second string // status patches: the first must pass
		want          []metav1.StatusCause
	}{
		"a Never pod's terminated container may not run again": {
			restartPolicy: "Never",
			first:         `{"status":{"containerStatuses":[{"name":"c","image":"busybox:1.35","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0}}}]}}`,
			second:        `{"status":{"containerStatuses":[{"name":"c","image":"busybox:1.35","imageID":"","ready":true,"restartCount":0,"state":{"running":{}}}]}}`,
			want:          []metav1.StatusCause{{Type: "FieldValueForbidden", Field: "status.containerStatuses[0].state", Message: "Forbidden: may not be transitioned to non-terminated state"}},
		},
		"an OnFailure pod's failed container may": {
			restartPolicy: "OnFailure",
			first:         `{"status":{"containerStatuses":[{"name":"c","image":"busybox:1.35","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":1}}}]}}`,
			second:        `{"status":{"containerStatuses":[{"name":"c","image":"busybox:1.35","imageID":"","ready":true,"restartCount":1,"state":{"running":{}}}]}}`,
		},
		"bad condition type, negative generation, bad IPs": {
			restartPolicy: "Never",
			first:         `{"status":{"podIP":"10.0.0.2","podIPs":[{"ip":"10.0.0.2"}]}}`,
			second:        `{"status":{"observedGeneration":-1,"conditions":[{"type":"not a type","status":"True"}],"podIPs":[{"ip":"10.0.0.2"},{"ip":"nope"}]}}`,
			want: []metav1.StatusCause{
				{Type: "FieldValueInvalid", Field: "status.conditions[0].Type", Message: `Invalid value: "not a type": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
				{Type: "FieldValueInvalid", Field: "status.observedGeneration", Message: "Invalid value: -1: must be a non-negative integer"},
				{Type: "FieldValueInvalid", Field: "status.podIPs[1]", Message: `Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`},
				{Type: "FieldValueInvalid", Field: "status.podIPs", Message: `Invalid value: [{"IP":"10.0.0.2"},{"IP":"nope"}]: may specify no more than one IP for each IP family`},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			ts.mustDo(t, "POST", podsPath, `{"metadata":{"name":"p"},"spec":{"restartPolicy":"`+tc.restartPolicy+`","containers":[{"name":"c","image":"busybox:1.35"}]}}`)
			if r := ts.do(t, "PATCH", podsPath+"/p/status", tc.first, merge); r.code != 200 {
				t.Fatalf("first patch: %d %s", r.code, r.body)
			}
			r := ts.do(t, "PATCH", podsPath+"/p/status", tc.second, merge)
			if tc.want == nil {
				if r.code != 200 {
					t.Fatalf("second patch: %d %s", r.code, r.body)
				}
				return
			}
			if r.code != 422 {
				t.Fatalf("code %d, want 422: %s", r.code, r.body)
			}
			if diff := cmp.Diff(tc.want, statusOf(t, r.body).Details.Causes); diff != "" {
				t.Errorf("causes (-want,+got):\n%s", diff)
			}
		})
	}
}
