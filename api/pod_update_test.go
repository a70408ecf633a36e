package api

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodUpdateForbiddenStatus(t *testing.T) {
	ts := newTestServer(t)
	ts.do(t, "POST", podsPath, podJSON("p"))
	r := ts.do(t, "PATCH", podsPath+"/p", `{"spec":{"containers":[{"name":"c","args":["x"]}]}}`,
		"Content-Type: application/strategic-merge-patch+json")
	st := statusOf(t, r.body)
	if r.code != 422 || st.Reason != metav1.StatusReasonInvalid || st.Details == nil || st.Details.Kind != "Pod" {
		t.Fatalf("code %d: %s", r.code, r.body)
	}
	const prefix = "Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
	if !strings.HasPrefix(st.Message, prefix) || !strings.Contains(st.Message, "Args:") {
		t.Errorf("message = %q, want the prefix %q and a diff naming Args", st.Message, prefix)
	}
}
