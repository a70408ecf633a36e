package jobcontroller

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestMetricsFollowAFailingJob runs a Job whose podFailurePolicy ignores
// exit code 3 and whose backoffLimit is 0: the first failure (3) is
// ignored and replaced, the second (1) fails the Job.
func TestMetricsFollowAFailingJob(t *testing.T) {
	s := openStore(t)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	startController(t, Config{Store: s, Metrics: m})
	job := createJob(t, s, newJob("fails", func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](0)
		j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:      batchv1.PodFailurePolicyActionIgnore,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3}},
		}}}
	}))
	first := waitActivePods(t, s, job.UID, 1)[0]
	finishPod(t, s, first, 3, time.Now())
	waitFor(t, "a replacement", func() error {
		if n := len(filterPods(podsOf(t, s, job.UID), isActivePod)); n != 1 {
			return fmt.Errorf("%d active", n)
		}
		return nil
	})
	second := filterPods(podsOf(t, s, job.UID), isActivePod)[0]
	finishPod(t, s, second, 1, time.Now())
	waitJob(t, s, "fails", hasCondition(batchv1.JobFailed))

	waitFor(t, "the metrics", func() error {
		checks := map[string]struct {
			c    prometheus.Collector
			want float64
		}{
			// NOTE: an ignored failure is no failure: its replacement is
			// "new", as Kubernetes counts it.
			"pods created new":      {m.podsCreation.WithLabelValues("new", "succeeded"), 2},
			"ignored by the policy": {m.failurePolicy.WithLabelValues("Ignore"), 1},
			"failed pods counted":   {m.podsFinished.WithLabelValues("NonIndexed", "failed"), 1},
			"job failed":            {m.jobsFinished.WithLabelValues("NonIndexed", "failed", batchv1.JobReasonBackoffLimitExceeded), 1},
			"finished pods tracked": {m.trackingFinalizer.WithLabelValues("add"), 2},
			"and released":          {m.trackingFinalizer.WithLabelValues("delete"), 2},
			"pods_created syncs":    {m.syncs.WithLabelValues("NonIndexed", "success", actionPodsCreated), 2},
		}
		for name, c := range checks {
			if got := testutil.ToFloat64(c.c); got != c.want {
				return fmt.Errorf("%s: %v, want %v", name, got, c.want)
			}
		}
		if got := testutil.ToFloat64(m.syncs.WithLabelValues("NonIndexed", "success", actionReconciling)); got < 1 {
			return fmt.Errorf("reconciling syncs: %v, want the failing one at least", got)
		}
		return nil
	})
	if n, err := testutil.GatherAndCount(reg, "job_controller_job_sync_duration_seconds"); err != nil || n == 0 {
		t.Errorf("job_controller_job_sync_duration_seconds: %d series, %v", n, err)
	}
}

func TestSyncAction(t *testing.T) {
	tests := map[string]struct {
		res  syncResult
		want string
	}{
		"not managed":  {syncResult{}, actionReconciling},
		"finishing":    {syncResult{plan: &syncPlan{finishing: true, deletes: []*corev1.Pod{{}}}}, actionReconciling},
		"deleting":     {syncResult{plan: &syncPlan{deletes: []*corev1.Pod{{}}}}, actionPodsDeleted},
		"creating":     {syncResult{plan: &syncPlan{creates: []podToCreate{{}}}}, actionPodsCreated},
		"only counted": {syncResult{plan: &syncPlan{}}, actionTracking},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := syncAction(tc.res); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

func TestPodCreationReason(t *testing.T) {
	tests := map[string]struct {
		policy             batchv1.PodReplacementPolicy
		failed, terminated int32
		want               string
	}{
		"first pods":                     {batchv1.TerminatingOrFailed, 0, 0, "new"},
		"after a failure":                {batchv1.TerminatingOrFailed, 1, 0, "recreate_terminating_or_failed"},
		"while one terminates":           {batchv1.TerminatingOrFailed, 0, 1, "recreate_terminating_or_failed"},
		"after a failure, Failed policy": {batchv1.Failed, 1, 0, "recreate_failed"},
		"while one terminates, Failed":   {batchv1.Failed, 0, 1, "recreate_terminating_or_failed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			job := newJob("j", func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(tc.policy) })
			status := batchv1.JobStatus{Failed: tc.failed, Terminating: ptr.To(tc.terminated)}
			if got := podCreationReason(job, status); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

// An Indexed Job's succeeded pods are counted by the indexes completed, as
// Kubernetes' recordJobPodFinished does, and its indexes by outcome.
func TestMetricsOfIndexedJob(t *testing.T) {
	m := NewMetrics(nil)
	job := newJob("ix", func(j *batchv1.Job) {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		j.Spec.Completions = ptr.To[int32](5)
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](0)
	})
	res := syncResult{
		job: job, completionMode: "Indexed",
		beforeCounts: batchv1.JobStatus{CompletedIndexes: "0", FailedIndexes: ptr.To("")},
		plan:         &syncPlan{status: batchv1.JobStatus{CompletedIndexes: "0-2", FailedIndexes: ptr.To("4"), Failed: 1}},
	}
	m.observeCommitted(res)
	checks := map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"indexes succeeded": {m.finishedIndexes.WithLabelValues("succeeded", "perIndex"), 2},
		"indexes failed":    {m.finishedIndexes.WithLabelValues("failed", "perIndex"), 1},
		"pods succeeded":    {m.podsFinished.WithLabelValues("Indexed", "succeeded"), 2},
		"pods failed":       {m.podsFinished.WithLabelValues("Indexed", "failed"), 1},
	}
	for name, c := range checks {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}
