//go:build integration

package daemon_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestJSONLogs: with --log-format json every line skiffd writes is one JSON
// object, and at debug level each request is logged with who asked (the
// socket's admin, or anonymous over TCP), the verb and resource, the code
// and the duration.
func TestJSONLogs(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--log-format", "json") // the harness logs at debug
	s.start()
	get := func(c *http.Client, url string) {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get(s.anonymousClient(), s.url("/api/v1/namespaces/default/pods?limit=5"))
	overSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.socket)
	}}}
	get(overSocket, "http://skiffd/apis/batch/v1/namespaces/default/jobs/missing")
	s.stop()

	data, err := os.ReadFile(s.logFile())
	if err != nil {
		t.Fatal(err)
	}
	var requests []map[string]any
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("line %d is no JSON object: %v\n%s", i+1, err, line)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := entry[k]; !ok {
				t.Errorf("line %d has no %q: %s", i+1, k, line)
			}
		}
		if entry["msg"] == "request" {
			requests = append(requests, entry)
		}
	}
	wants := []map[string]any{
		{"user": "system:anonymous", "verb": "list", "resource": "pods", "namespace": "default", "code": 200.0},
		{"user": "system:admin", "verb": "get", "resource": "jobs", "group": "batch", "namespace": "default", "name": "missing", "code": 404.0},
	}
	for _, want := range wants {
		found := false
		for _, r := range requests {
			match := true
			for k, v := range want {
				match = match && r[k] == v
			}
			if d, _ := r["duration"].(string); match && d != "" && r["level"] == "debug" {
				found = true
			}
		}
		if !found {
			t.Errorf("no request logged as %v among %d", want, len(requests))
		}
	}
}
