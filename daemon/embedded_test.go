//go:build integration

package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEmbeddedContainerd: with no containerd answering on the configured
// socket, skiffd starts its own (root and state under its data dir) and runs
// a Job through it.
func TestEmbeddedContainerd(t *testing.T) {
	t.Parallel()
	// The later --containerd-address wins: a socket nobody serves.
	s := newSkiffd(t, "--containerd-address", filepath.Join(t.TempDir(), "none.sock"))
	s.start()
	ctx := context.Background()
	job, err := s.client.BatchV1().Jobs("default").Create(ctx, shJob("embedded", "echo ok", 1, 1, 0, corev1.RestartPolicyNever), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, s.client, "default", job.Name, batchv1.JobComplete, 2*time.Minute)
	if _, err := os.Stat(filepath.Join(s.dataDir, "containerd", "root")); err != nil {
		t.Errorf("embedded containerd root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(s.socket), "containerd.sock")); err != nil {
		t.Errorf("embedded containerd socket: %v", err)
	}
}
