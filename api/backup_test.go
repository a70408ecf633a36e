package api

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// TestBackup: the store's copy is served to the admin over the unix socket
// only; anonymous clients get kube's 403 for a non-resource path.
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	store, err := db.Open(filepath.Join(dir, "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Create(db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "backed-up"}}); err != nil {
		t.Fatal(err)
	}
	h := New(Config{Store: store})
	tcp := httptest.NewServer(h)
	defer tcp.Close()
	socket := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	unix := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	unix.Start()
	defer unix.Close()
	overSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}

	t.Run("anonymous", func(t *testing.T) {
		resp, err := http.Get(tcp.URL + BackupPath)
		if err != nil {
			t.Fatal(err)
		}
		data := readAllBody(t, resp)
		st := statusOf(t, data)
		if resp.StatusCode != 403 || st.Reason != metav1.StatusReasonForbidden ||
			st.Message != `forbidden: User "system:anonymous" cannot get path "/skiff/v1/backup"` {
			t.Errorf("%d %+v", resp.StatusCode, st)
		}
	})
	t.Run("wrong method", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, "http://skiffd"+BackupPath, nil)
		resp, err := overSocket.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if st := statusOf(t, readAllBody(t, resp)); resp.StatusCode != 405 || st.Reason != metav1.StatusReasonMethodNotAllowed {
			t.Errorf("%d %+v", resp.StatusCode, st)
		}
	})
	t.Run("admin", func(t *testing.T) {
		resp, err := overSocket.Get("http://skiffd" + BackupPath)
		if err != nil {
			t.Fatal(err)
		}
		data := readAllBody(t, resp)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("%d %s", resp.StatusCode, resp.Header)
		}
		if n, _ := strconv.Atoi(resp.Header.Get("Content-Length")); n != len(data) || n == 0 {
			t.Errorf("Content-Length %s, body %d bytes", resp.Header.Get("Content-Length"), len(data))
		}
		path := filepath.Join(t.TempDir(), "backup.db")
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		rv, err := db.CheckBackup(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get(BackupResourceVersionHeader); got != strconv.FormatUint(rv, 10) {
			t.Errorf("%s %s, copy holds %d", BackupResourceVersionHeader, got, rv)
		}
		restored, err := db.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer restored.Close()
		if _, err := restored.Get(db.Namespaces, "", "backed-up"); err != nil {
			t.Errorf("namespace missing from the backup: %v", err)
		}
	})
}

func readAllBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
