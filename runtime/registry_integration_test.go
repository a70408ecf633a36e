//go:build integration

package runtime_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/skiff-sh/skiff/runtime"
)

// testRegistry serves an image as <host>/test/busybox:1.35 over the
// registry API, with basic auth when user is set.
type testRegistry struct {
	variant
	host       string
	user, pass string
}

// newTestRegistry serves a variant of the test image with an extra layer
// holding /hello.txt until the test ends.
func newTestRegistry(t *testing.T, user, pass string) *testRegistry {
	t.Helper()
	reg := &testRegistry{variant: newVariant(t, "registry", "hello.txt"), user: user, pass: pass}
	srv := httptest.NewServer(reg)
	t.Cleanup(srv.Close)
	reg.host = strings.TrimPrefix(srv.URL, "http://")
	return reg
}

func (reg *testRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if reg.user != "" {
		if user, pass, ok := req.BasicAuth(); !ok || user != reg.user || pass != reg.pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	if req.URL.Path == "/v2/" {
		return
	}
	rest, ok := strings.CutPrefix(req.URL.Path, "/v2/test/busybox/")
	kind, ref, _ := strings.Cut(rest, "/")
	if !ok || (kind != "manifests" && kind != "blobs") {
		http.NotFound(w, req)
		return
	}
	if ref == "1.35" {
		ref = reg.manifest
	}
	data, found := reg.blobs[ref]
	if !found {
		http.NotFound(w, req)
		return
	}
	if kind == "manifests" {
		w.Header().Set("Content-Type", reg.mediaType)
	}
	w.Header().Set("Docker-Content-Digest", ref)
	w.Header().Set("Content-Length", fmt.Sprint(len(data)))
	if req.Method != http.MethodHead {
		w.Write(data)
	}
}

// writeDockerConfig writes a config.json with credentials for host.
func writeDockerConfig(t *testing.T, host, user, pass string) string {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	path := filepath.Join(t.TempDir(), "config.json")
	data := fmt.Sprintf(`{"auths":{"http://%s/":{"auth":%q}}}`, host, auth)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// newRuntimeWith connects a Runtime with options (this binary as log driver).
func newRuntimeWith(t *testing.T, opts ...runtime.Option) *runtime.Runtime {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), env.Address, env.Namespace, exe, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func TestPullWithProgress(t *testing.T) {
	reg := newTestRegistry(t, "", "")
	rt := newRuntime(t)
	ref := reg.host + "/test/busybox:1.35"
	t.Cleanup(func() { removeImage(t, ref) })

	var mu sync.Mutex
	done := map[string]int64{}
	err := rt.EnsureImageWithProgress(context.Background(), ref, runtime.PullIfNotPresent, func(p runtime.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Ref != ref {
			t.Errorf("progress of %q", p.Ref)
		}
		if p.Done {
			done[p.Digest] = p.Offset
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// The manifest, its config and the new layer each finished (the base
	// layer is unpacked already: containerd does not fetch it).
	if len(done) != 3 {
		t.Errorf("blobs done: %v, want 3", done)
	}
	for digest, offset := range done {
		if offset != int64(len(reg.blobs[digest])) {
			t.Errorf("%s done at %d of %d bytes", digest, offset, len(reg.blobs[digest]))
		}
	}
	info, err := rt.ImageInfo(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := reg.host + "/test/busybox@" + reg.manifest; info.ID != want {
		t.Errorf("image ID %q, want %q", info.ID, want)
	}
	cfg := newConfig(t, "cat", "/hello.txt")
	cfg.Image = ref
	if diff := cmp.Diff([]string{"stdout from the extra layer"}, run(t, rt, cfg)); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
}

func TestPullCredentials(t *testing.T) {
	reg := newTestRegistry(t, "puller", "s3cret")
	ref := reg.host + "/test/busybox:1.35"
	secret := func(user, pass string) []byte {
		auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
		return []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.host, auth))
	}
	legacy := []byte(fmt.Sprintf(`{%q:{"username":"puller","password":"s3cret"}}`, reg.host))
	tests := map[string]struct {
		config      string
		pullSecrets [][]byte
		wantErr     error
	}{
		"no config":          {config: "", wantErr: runtime.ErrImagePull},
		"wrong password":     {config: writeDockerConfig(t, reg.host, "puller", "guess"), wantErr: runtime.ErrImagePull},
		"config credentials": {config: writeDockerConfig(t, reg.host, "puller", "s3cret")},
		"pod pull secret":    {pullSecrets: [][]byte{secret("puller", "s3cret")}},
		"legacy dockercfg":   {pullSecrets: [][]byte{legacy}},
		"wrong secret, then the config": {config: writeDockerConfig(t, reg.host, "puller", "s3cret"),
			pullSecrets: [][]byte{secret("puller", "guess")}},
		"wrong secret, then a right one": {pullSecrets: [][]byte{secret("puller", "guess"), secret("puller", "s3cret")}},
		"secret of another registry":     {pullSecrets: [][]byte{[]byte(`{"auths":{"other.example":{"auth":"eDp5"}}}`)}, wantErr: runtime.ErrImagePull},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Cleanup(func() { removeImage(t, ref) })
			rt := newRuntimeWith(t, runtime.WithRegistryConfig(tc.config))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ctx = runtime.WithPullSecrets(ctx, tc.pullSecrets...)
			err := rt.EnsureImage(ctx, ref, runtime.PullAlways)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("EnsureImage = %v, want %v", err, tc.wantErr)
			}
		})
	}
}
