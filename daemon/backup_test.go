//go:build integration

package daemon_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBackupRestore backs up a running skiffd's store with `skiffd backup`
// and restores it as the README says: stop skiffd, put the copy in place
// of skiff.db, start it. What was written after the backup is gone, what
// was before is back. Over TCP the backup is refused: it is the admin's.
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	create := func(name string) {
		t.Helper()
		if _, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("before-backup")
	backup := filepath.Join(t.TempDir(), "skiff-backup.db")
	_, stderr, err := runSkiffd("backup", "--socket", s.socket, backup)
	if err != nil || !strings.HasPrefix(stderr, "backed up resourceVersion ") {
		t.Fatalf("skiffd backup: %v %q", err, stderr)
	}
	create("after-backup")

	s.stop()
	if err := os.Rename(backup, filepath.Join(s.dataDir, "skiff.db")); err != nil {
		t.Fatal(err)
	}
	s.start()
	if _, err := s.client.CoreV1().Namespaces().Get(ctx, "before-backup", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace written before the backup: %v", err)
	}
	if _, err := s.client.CoreV1().Namespaces().Get(ctx, "after-backup", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace written after the backup: %v, want NotFound", err)
	}

	code, body := rawGet(t, s.anonymousClient(), s.url("/skiff/v1/backup"))
	if code != 403 || !strings.Contains(body, `forbidden: User \"system:anonymous\" cannot get path \"/skiff/v1/backup\"`) {
		t.Errorf("backup over TCP: %d %s", code, body)
	}
}

// rawGet is a plain GET with c: its status code and body.
func rawGet(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, readAll(t, resp.Body)
}
