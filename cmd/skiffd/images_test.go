package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeDaemon answers POST /skiff/v1/images with code and body, recording
// the tarball and Content-Type it got.
type fakeDaemon struct {
	code        int
	body        string
	got         string
	contentType string
}

func (f *fakeDaemon) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/skiff/v1/images" {
		http.NotFound(w, r)
		return
	}
	data, _ := io.ReadAll(r.Body)
	f.got, f.contentType = string(data), r.Header.Get("Content-Type")
	w.WriteHeader(f.code)
	_, _ = io.WriteString(w, f.body)
}

func TestImagesImportCommand(t *testing.T) {
	tarball := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(tarball, []byte("tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args    []string // after "images import"; "SERVER" is the fake's URL
		code    int
		body    string
		wantOut string
		wantErr string // substring; "" = success
	}{
		"imported": {
			args: []string{"--server", "SERVER", tarball}, code: 200,
			body:    `{"images":["docker.io/library/busybox:1.35","docker.io/library/alpine:3"]}`,
			wantOut: "docker.io/library/busybox:1.35\ndocker.io/library/alpine:3\n",
		},
		"refused with a Status": {
			args: []string{"--server", "SERVER", tarball}, code: 400,
			body:    `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"importing image archive: unrecognized image format","reason":"BadRequest","code":400}`,
			wantErr: "importing image: importing image archive: unrecognized image format",
		},
		"refused without a Status": {
			args: []string{"--server", "SERVER", tarball}, code: 502, body: "bad gateway",
			wantErr: "502 Bad Gateway",
		},
		"missing file": {
			args: []string{"--server", "SERVER", tarball + ".missing"}, wantErr: "opening image tarball",
		},
		"no file": {
			args: []string{"--server", "SERVER"}, wantErr: "usage",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			fake := &fakeDaemon{code: tt.code, body: tt.body}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			args := []string{"import"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "SERVER", srv.URL))
			}
			var out bytes.Buffer
			err := runImages(context.Background(), args, &out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantOut, out.String()); diff != "" {
				t.Errorf("output (-want,+got):\n%s", diff)
			}
			if fake.got != "tarball" || fake.contentType != "application/x-tar" {
				t.Errorf("daemon got %q as %q", fake.got, fake.contentType)
			}
		})
	}
}

func TestImagesImportOverSocket(t *testing.T) {
	dir := t.TempDir()
	socket := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeDaemon{code: 200, body: `{"images":["docker.io/library/busybox:1.35"]}`}
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: fake}}
	srv.Start()
	defer srv.Close()
	tarball := filepath.Join(dir, "image.tar")
	if err := os.WriteFile(tarball, []byte("tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runImages(context.Background(), []string{"import", "--socket", socket, tarball}, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("docker.io/library/busybox:1.35\n", out.String()); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
}

func TestImagesUsage(t *testing.T) {
	for name, args := range map[string][]string{"none": nil, "unknown": {"list"}} {
		t.Run(name, func(t *testing.T) {
			if err := runImages(context.Background(), args, io.Discard); err == nil || !strings.Contains(err.Error(), "usage") {
				t.Errorf("error %v, want usage", err)
			}
		})
	}
}
