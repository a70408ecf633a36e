package garbagecollector

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/db"
)

// finishJob writes a terminal condition at `at`, as the Job controller does.
func finishJob(t *testing.T, s *db.Store, name string, ttl int32, at time.Time) {
	t.Helper()
	if _, err := s.Modify(db.Jobs, ns, name, func(o db.Object) error {
		j := o.(*batchv1.Job)
		j.Spec.TTLSecondsAfterFinished = ptr.To(ttl)
		j.Status.Conditions = []batchv1.JobCondition{{
			Type: batchv1.JobComplete, Status: corev1.ConditionTrue,
			LastProbeTime: metav1.NewTime(at), LastTransitionTime: metav1.NewTime(at),
		}}
		return nil
	}); err != nil {
		t.Fatalf("finishing job: %v", err)
	}
}

func TestTTLAfterFinishedDeletesJobAndPods(t *testing.T) {
	s := openStore(t)
	start := time.Now().Truncate(time.Second)
	clk := clocktesting.NewFakeClock(start)
	startCollector(t, Config{Store: s, Clock: clk})
	job := createJob(t, s, "job-ttl")
	pod := createPod(t, s, "ttl-pod", true, jobRef(job.Name, job.UID))
	finishJob(t, s, job.Name, 10, start)
	if _, err := s.Modify(db.Pods, ns, pod.Name, func(o db.Object) error {
		o.(*corev1.Pod).Status.Phase = corev1.PodSucceeded
		return nil
	}); err != nil {
		t.Fatalf("finishing pod: %v", err)
	}

	waitFor(t, "the TTL timer", func() error {
		if !clk.HasWaiters() {
			return fmt.Errorf("no timer")
		}
		return nil
	})
	clk.Step(9 * time.Second)
	if _, err := s.Get(db.Jobs, ns, job.Name); err != nil {
		t.Fatalf("job deleted before its TTL: %v", err)
	}
	clk.Step(time.Second)
	waitFor(t, "pod deleted", gone(s, db.Pods, pod.Name))
	waitFor(t, "job deleted", gone(s, db.Jobs, job.Name))
}

func TestTTLSurvivesRestart(t *testing.T) {
	s := openStore(t)
	finished := time.Now().Truncate(time.Second).Add(-time.Hour)
	job := createJob(t, s, "job-old")
	finishJob(t, s, job.Name, 60, finished)
	startCollector(t, Config{Store: s})
	waitFor(t, "job deleted", gone(s, db.Jobs, job.Name))
}

func TestExpiry(t *testing.T) {
	done := func(ttl *int32, deleting bool, conds ...batchv1.JobConditionType) *batchv1.Job {
		j := &batchv1.Job{Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl}}
		if deleting {
			j.DeletionTimestamp = ptr.To(metav1.NewTime(time.Unix(0, 0)))
		}
		for _, c := range conds {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{
				Type: c, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Unix(100, 0)),
			})
		}
		return j
	}
	cases := map[string]struct {
		job    *batchv1.Job
		want   time.Time
		wantOK bool
	}{
		"complete":        {done(ptr.To[int32](5), false, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete), time.Unix(105, 0), true},
		"failed":          {done(ptr.To[int32](0), false, batchv1.JobFailureTarget, batchv1.JobFailed), time.Unix(100, 0), true},
		"not finished":    {done(ptr.To[int32](5), false, batchv1.JobFailureTarget), time.Time{}, false},
		"no ttl":          {done(nil, false, batchv1.JobComplete), time.Time{}, false},
		"already deleted": {done(ptr.To[int32](5), true, batchv1.JobComplete), time.Time{}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := expiry(tc.job)
			if !got.Equal(tc.want) || ok != tc.wantOK {
				t.Errorf("expiry = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
