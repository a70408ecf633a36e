//go:build integration && scale

package daemon_test

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestJobScale5000: a Job of 5000 completions, 20 at a time, of containers
// running `true`, completes with every pod counted once. It runs alone (not
// in parallel; `make scale`, part of `make test`) and reports its throughput.
func TestJobScale5000(t *testing.T) {
	const completions, parallelism = 5000, 20
	s := newSkiffd(t)
	s.start()
	c := s.client
	job := shJob("scale", "", completions, parallelism, 0, corev1.RestartPolicyNever)
	job.Spec.Template.Spec.Containers[0].Command = []string{"true"}
	start := time.Now()
	job, err := c.BatchV1().Jobs("default").Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Poll once a second: the test should not load the machine it measures.
	var st batchv1.JobStatus
	lastReport := start
	for !hasCondition(st, batchv1.JobComplete, corev1.ConditionTrue) && !hasCondition(st, batchv1.JobFailed, corev1.ConditionTrue) {
		time.Sleep(time.Second)
		j, err := c.BatchV1().Jobs("default").Get(context.Background(), job.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st = j.Status
		if time.Since(lastReport) >= 30*time.Second {
			lastReport = time.Now()
			t.Logf("%s: %d succeeded, %d active", time.Since(start).Round(time.Second), st.Succeeded, st.Active)
		}
		// NOTE: a guard against a hang, not a target: on a machine kind
		// where a process costs five times more the Job takes about 25
		// minutes (BENCHMARKS.md, 2026-12-02).
		if time.Since(start) > 40*time.Minute {
			t.Fatalf("not finished after 40 minutes; status:\n%s", toYAML(st))
		}
	}
	elapsed := time.Since(start)
	t.Logf("%d pods, parallelism %d: %s, %.1f pods/s", completions, parallelism, elapsed.Round(time.Second), completions/elapsed.Seconds())
	if st.Succeeded != completions || st.Failed != 0 || st.Active != 0 || !hasCondition(st, batchv1.JobComplete, corev1.ConditionTrue) {
		t.Errorf("final status:\n%s\nwant Complete with %d succeeded", toYAML(st), completions)
	}
	pods := jobPods(t, c, job)
	succeeded := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded && len(p.Finalizers) == 0 {
			succeeded++
		}
	}
	if len(pods) != completions || succeeded != completions {
		t.Errorf("%d pods, %d of them succeeded and counted; want %d of %d", len(pods), succeeded, completions, completions)
	}
}
