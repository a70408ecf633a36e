//go:build integration

package daemon_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestProfiling: skiffd serves Go's profiles at /debug/pprof/ as
// kube-apiserver does with --profiling (on by default) to those RBAC lets
// get the path (its admin here; nobody without credentials), and not at
// all with --profiling=false.
func TestProfiling(t *testing.T) {
	t.Parallel()
	get := func(c *http.Client, s *skiffd, path string) (int, string) {
		t.Helper()
		resp, err := c.Get(s.url(path))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	on := newSkiffd(t)
	on.start()
	if code, body := get(on.httpClient(), on, "/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.HasPrefix(body, "heap profile:") {
		t.Errorf("GET /debug/pprof/heap?debug=1: %d %.80q", code, body)
	}
	if code, body := get(on.httpClient(), on, "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("GET /debug/pprof/: %d %.80q", code, body)
	}
	if code, body := get(on.httpClient(), on, "/debug/pprof/profile?seconds=1"); code != http.StatusOK || len(body) == 0 {
		t.Errorf("GET /debug/pprof/profile?seconds=1: %d, %d bytes", code, len(body))
	}
	if code, body := get(on.anonymousClient(), on, "/debug/pprof/heap?debug=1"); code != http.StatusUnauthorized {
		t.Errorf("GET /debug/pprof/heap without credentials: %d %.80q, want 401", code, body)
	}

	off := newSkiffd(t, "--profiling=false")
	off.start()
	if code, body := get(off.httpClient(), off, "/debug/pprof/heap?debug=1"); code != http.StatusNotFound {
		t.Errorf("with --profiling=false, GET /debug/pprof/heap: %d %.80q, want 404", code, body)
	}
}
