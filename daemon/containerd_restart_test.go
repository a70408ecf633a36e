//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// TestContainerdRestartCostsNoFailure restarts the containerd under a
// running Job twice — once stopped, once killed — while pods are being
// created, started, stopped and removed. With backoffLimit 0 a single
// failure charged to a pod would fail the Job; it must complete, with
// every count equal to what containerd really ran, no container run twice
// and nothing left behind once it is deleted.
func TestContainerdRestartCostsNoFailure(t *testing.T) {
	t.Parallel()
	env := runtimetest.Start(t)
	s := newSkiffd(t, "--sweep-interval", "300ms")
	s.cd = env
	events := recordEvents(t, env, s.namespace())
	s.start()
	ctx := context.Background()
	marks := t.TempDir()
	job, err := s.client.BatchV1().Jobs("default").Create(ctx, withRunMarkers(shJob("restart", "sleep 0.4", 30, 6, 0, corev1.RestartPolicyNever), marks), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, kill := range []bool{false, true} {
		waitFor(t, 2*time.Minute, "pods to succeed before restarting containerd", func() (bool, error) {
			j, err := s.client.BatchV1().Jobs("default").Get(ctx, job.Name, metav1.GetOptions{})
			if err == nil && j.Status.Failed > 0 {
				return false, fmt.Errorf("job counts %d failed pods; none failed", j.Status.Failed)
			}
			return err == nil && j.Status.Succeeded >= int32(6+9*i), err
		})
		if err := env.Restart(ctx, kill); err != nil {
			t.Fatal(err)
		}
	}
	job = waitJob(t, s.client, "default", job.Name, batchv1.JobComplete, 3*time.Minute)
	real := checkJob(t, events, job, jobPods(t, s.client, job), runMarkers(t, marks))
	if job.Status.Failed != 0 || real.succeeded != 30 {
		t.Errorf("job counts %d failed; containerd ran %+v; want 30 successes and no failure", job.Status.Failed, real)
	}
	s.deleteJobs(time.Minute)
	s.assertNothingLeft(30 * time.Second)
}
