//go:build integration

package daemon_test

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/failpoint"
)

// indexedJob is an Indexed Job whose index 1 always fails (exit 1) and the
// others succeed, each after a short sleep; with backoffLimitPerIndex 1 it
// ends Failed with 3 successes and 2 failures, whatever happens to skiffd.
func indexedJob(name string, completions, parallelism int32) *batchv1.Job {
	job := shJob(name, `sleep 0.3; [ "$JOB_COMPLETION_INDEX" != 1 ]`, completions, parallelism, 6, corev1.RestartPolicyNever)
	mode := batchv1.IndexedCompletion
	job.Spec.CompletionMode = &mode
	job.Spec.BackoffLimit = nil
	job.Spec.BackoffLimitPerIndex = ptr(int32(1))
	return job
}

// TestFailpoints kills skiffd at each named point of a container's life
// (failpoint.Points) while an Indexed Job runs, restarts it on the same
// data dir, and checks against containerd's own event stream that no
// container ran twice, that every pod recorded its instance's real exit
// code, that the Job counted exactly what ran, and that once the Job is
// deleted nothing of it is left in containerd or on disk.
func TestFailpoints(t *testing.T) {
	t.Parallel()
	for _, point := range failpoint.Points {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			s := newSkiffd(t, "--sweep-interval", "300ms")
			s.useFailpoint(point)
			events := recordEvents(t, s.cd, s.namespace())
			s.start()
			ctx := context.Background()
			job, err := s.client.BatchV1().Jobs("default").Create(ctx, indexedJob("fp", 4, 2), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s.waitKilledAt(point, 2*time.Minute)
			s.start()

			job = waitJob(t, s.client, "default", job.Name, batchv1.JobFailed, 2*time.Minute)
			real := checkJob(t, events, job, jobPods(t, s.client, job), nil)
			if real != (outcome{succeeded: 3, failed: 2}) || job.Status.FailedIndexes == nil || *job.Status.FailedIndexes != "1" {
				t.Errorf("ran %+v with failed indexes %v; want 3 successes, 2 failures of index 1", real, job.Status.FailedIndexes)
			}
			s.deleteJobs(time.Minute)
			s.assertNothingLeft(30 * time.Second)
		})
	}
}
