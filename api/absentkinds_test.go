package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestAbsentKinds: lists of the workload kinds skiff never holds answer
// empty, in a namespace and across them; anything else of them, and their
// discovery, stays unknown.
func TestAbsentKinds(t *testing.T) {
	ts := newTestServer(t)
	tests := map[string]struct {
		method, path string
		code         int
		body         string
	}{
		"rc list":               {"GET", "/api/v1/namespaces/default/replicationcontrollers", 200, `{"kind":"ReplicationControllerList","apiVersion":"v1","metadata":{"resourceVersion":"`},
		"deployments, all":      {"GET", "/apis/apps/v1/deployments", 200, `{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{"resourceVersion":"`},
		"daemonsets":            {"GET", "/apis/apps/v1/namespaces/x/daemonsets", 200, `{"kind":"DaemonSetList","apiVersion":"apps/v1"`},
		"replicasets":           {"GET", "/apis/apps/v1/namespaces/x/replicasets", 200, `"items":[]}`},
		"watch":                 {"GET", "/apis/apps/v1/deployments?watch=true", 404, "the server could not find the requested resource"},
		"create":                {"POST", "/apis/apps/v1/namespaces/default/deployments", 404, "the server could not find the requested resource"},
		"get one":               {"GET", "/apis/apps/v1/namespaces/default/deployments/d", 404, "the server could not find the requested resource"},
		"apps not in discovery": {"GET", "/apis/apps/v1", 404, "the server could not find the requested resource"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			body := ""
			if tc.method == http.MethodPost {
				body = `{}`
			}
			got := ts.do(t, tc.method, tc.path, body)
			if got.code != tc.code || !strings.Contains(got.body, tc.body) {
				t.Errorf("%s %s = %d %s, want %d with %s", tc.method, tc.path, got.code, got.body, tc.code, tc.body)
			}
		})
	}
}
