package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kubelet"
)

// testServer is an API server over a real store in a temp dir.
type testServer struct {
	*httptest.Server
	store   *db.Store
	logRoot string
	// watches receives the URL of every watch request as it starts.
	watches chan string
}

func newTestServer(t testing.TB, opts ...db.Option) *testServer {
	t.Helper()
	return newTestServerWith(t, Config{}, opts...)
}

// newTestServerWith is newTestServer with the fields of cfg that it sets.
func newTestServerWith(t testing.TB, cfg Config, opts ...db.Option) *testServer {
	t.Helper()
	dir := t.TempDir()
	store, err := db.Open(filepath.Join(dir, "skiff.db"), opts...)
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	ts := &testServer{store: store, logRoot: filepath.Join(dir, "logs"), watches: make(chan string, 100)}
	cfg.Store, cfg.NodeName = store, "node-a"
	if cfg.Streams == nil {
		// The kubelet's own: /log is tested over real log files.
		cfg.Streams = kubelet.NewStreams(nil, store, ts.logRoot, nil)
	}
	cfg.Version = version.Info{Major: "1", Minor: "34", GitVersion: "v1.34.0-skiff"}
	h := New(cfg)
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
			select {
			case ts.watches <- r.URL.String():
			default:
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		_ = store.Close()
	})
	return ts
}

// response is what a test request got back.
type response struct {
	code   int
	body   string
	header http.Header
}

// do sends a request; headers are "Name: value" strings.
func (ts *testServer) do(t testing.TB, method, path, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatalf("building request: %v", err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return response{code: resp.StatusCode, body: string(data), header: resp.Header}
}

// waitWatch waits for a watch request whose URL contains all of parts.
func (ts *testServer) waitWatch(t *testing.T, parts ...string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case u := <-ts.watches:
			match := true
			for _, p := range parts {
				match = match && strings.Contains(u, p)
			}
			if match {
				return
			}
		case <-timeout:
			t.Fatalf("no watch request with %v", parts)
		}
	}
}
