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
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/api"
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
	for name, args := range map[string][]string{
		"none": nil, "unknown": {"frobnicate"}, "list with arguments": {"list", "x"}, "list as yaml": {"list", "-o", "yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			if err := runImages(context.Background(), args, io.Discard); err == nil || !strings.Contains(err.Error(), "usage") {
				t.Errorf("error %v, want usage", err)
			}
		})
	}
}

func TestImagesList(t *testing.T) {
	list := `{"kind":"ImageList","apiVersion":"skiff/v1","items":[` +
		`{"name":"docker.io/library/alpine:3","digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","size":3456789},` +
		`{"name":"docker.io/library/busybox:1.35","digest":"sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210","size":1234,"lastUsed":"2025-03-01T12:00:00Z"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/skiff/v1/images" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, list)
	}))
	defer srv.Close()

	var out bytes.Buffer
	if err := runImages(context.Background(), []string{"list", "--server", srv.URL, "-o", "json"}, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != list {
		t.Errorf("json output %q", out.String())
	}
	out.Reset()
	if err := runImages(context.Background(), []string{"list", "--server", srv.URL}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NAME", "DIGEST", "SIZE", "LAST USED", "docker.io/library/alpine:3", "sha256:0123456789ab ",
		"3.3 MiB", "never", "docker.io/library/busybox:1.35", "1.2 KiB", " ago"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

func TestImageTable(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 5, 0, 0, time.UTC)
	used := metav1.NewTime(now.Add(-5 * time.Minute))
	images := []api.Image{
		{Name: "docker.io/library/busybox:1.35", Digest: "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", Size: 2 << 20, LastUsed: &used},
		{Name: "docker.io/library/alpine:3", Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Size: 512},
	}
	tests := map[string]struct {
		noTrunc bool
		want    string
	}{
		"short digests": {want: "" +
			"NAME                             DIGEST                SIZE      LAST USED\n" +
			"docker.io/library/busybox:1.35   sha256:fedcba987654   2.0 MiB   5m ago\n" +
			"docker.io/library/alpine:3       sha256:0123456789ab   512 B     never\n"},
		"whole digests": {noTrunc: true, want: "" +
			"NAME                             DIGEST                                                                    SIZE      LAST USED\n" +
			"docker.io/library/busybox:1.35   sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210   2.0 MiB   5m ago\n" +
			"docker.io/library/alpine:3       sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef   512 B     never\n"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := writeImageTable(&out, images, tt.noTrunc, now); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		300 << 20: "300.0 MiB", 5 << 30: "5.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	p := &progress{what: "importing image.tar", total: 300 << 20, start: start}
	p.read.Store(120 << 20)
	if got, want := p.line(start.Add(4*time.Second)), "importing image.tar: 120.0 MiB of 300.0 MiB (40%), 30.0 MiB/s"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	p = &progress{what: "importing -", total: -1, start: start}
	p.read.Store(10 << 20)
	p.eof.Store(true)
	if got, want := p.line(start.Add(2*time.Second)), "importing -: 10.0 MiB, 5.0 MiB/s, waiting for skiffd to unpack"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}
