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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/api"
	"github.com/skiff-sh/skiff/db"
)

// serveSocket serves h on a unix socket in dir and returns its path.
func serveSocket(t *testing.T, dir string, h http.Handler) string {
	t.Helper()
	socket := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
	return socket
}

func TestBackupCommand(t *testing.T) {
	dir := t.TempDir()
	store, err := db.Open(filepath.Join(dir, "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Create(db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}); err != nil {
		t.Fatal(err)
	}
	socket := serveSocket(t, dir, api.New(api.Config{Store: store}))

	t.Run("to a file", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "backup.db")
		if err := runBackup(context.Background(), []string{"--socket", socket, out}, io.Discard); err != nil {
			t.Fatal(err)
		}
		restored, err := db.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer restored.Close()
		if _, err := restored.Get(db.Namespaces, "", "kept"); err != nil {
			t.Error(err)
		}
	})
	t.Run("to standard output", func(t *testing.T) {
		var out bytes.Buffer
		if err := runBackup(context.Background(), []string{"--socket", socket, "-"}, &out); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "backup.db")
		if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CheckBackup(path); err != nil {
			t.Error(err)
		}
	})
}

func TestBackupCommandRefuses(t *testing.T) {
	tests := map[string]struct {
		handler http.HandlerFunc
		wantErr string
	}{
		"cut short": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "4096")
				_, _ = w.Write([]byte("partial"))
				panic(http.ErrAbortHandler)
			},
			wantErr: "backing up",
		},
		"not a store": {
			handler: func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hello") },
			wantErr: "the copy does not check",
		},
		"forbidden": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(403)
				_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/skiff/v1/backup\"","reason":"Forbidden","code":403}`)
			},
			wantErr: `backing up: forbidden: User "system:anonymous"`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			socket := serveSocket(t, dir, tt.handler)
			outDir := t.TempDir()
			out := filepath.Join(outDir, "backup.db")
			err := runBackup(context.Background(), []string{"--socket", socket, out}, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
			if left, _ := os.ReadDir(outDir); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
