//go:build integration && chaos

package daemon_test

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestChaosDoneWhen is issue 16's "done when" (make chaos): 20 kill -9
// rounds of skiffd during a 200-pod Job — Indexed, NonIndexed with flaky
// pods, and Indexed with failing indexes — and 4 containerd restarts
// during a 50-pod Job, each at random moments 0.5-4s apart. Each run must
// end with every Job's counts equal to what containerd really ran, no
// container run twice, no pod stuck, nothing left behind. The figures are
// logged (go test -v).
func TestChaosDoneWhen(t *testing.T) {
	sleep := `sleep 0.$((RANDOM % 9 + 1))`
	indexed := func(name, script string, perIndex *int32) *batchv1.Job {
		job := shJob(name, sleep+"; "+script, 200, 8, 1000, corev1.RestartPolicyNever)
		mode := batchv1.IndexedCompletion
		job.Spec.CompletionMode = &mode
		if perIndex != nil {
			job.Spec.BackoffLimit = nil
			job.Spec.BackoffLimitPerIndex = perIndex
		}
		return job
	}
	runs := map[string]chaos{
		"indexed-200-kills": {
			jobs:  []*batchv1.Job{indexed("indexed", "true", nil)},
			kills: 20,
		},
		"nonindexed-200-kills": {
			jobs:  []*batchv1.Job{flakyJob("nonindexed", 200, 8, "0.$((RANDOM % 9 + 1))")},
			kills: 20,
		},
		"failing-indexes-200-kills": {
			// Indexes 3, 13, …, 193 always fail: 20 failed indexes, each
			// tried twice; 180 successes, 40 failures, Job Failed.
			jobs:  []*batchv1.Job{indexed("failing", `[ $((JOB_COMPLETION_INDEX % 10)) != 3 ]`, ptr(int32(1)))},
			kills: 20,
		},
		"nonindexed-50-containerd-restarts": {
			// Slower pods at parallelism 4 keep the Job running through
			// the restarts.
			jobs:     []*batchv1.Job{flakyJob("restarts", 50, 4, "1.$((RANDOM % 9))")},
			restarts: 4,
		},
	}
	for _, name := range []string{"indexed-200-kills", "nonindexed-200-kills", "failing-indexes-200-kills", "nonindexed-50-containerd-restarts"} {
		t.Run(name, func(t *testing.T) {
			c := runs[name]
			c.minGap, c.maxGap, c.timeout = 500*time.Millisecond, 4*time.Second, 10*time.Minute
			fig := c.run(t)
			t.Logf("CHAOS %s: %s", name, fig)
		})
	}
}
