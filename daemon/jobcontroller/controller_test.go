package jobcontroller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// ignoreTimes compares statuses without their timestamps.
var ignoreTimes = cmp.Options{
	cmpopts.IgnoreFields(batchv1.JobStatus{}, "StartTime", "CompletionTime"),
	cmpopts.IgnoreFields(batchv1.JobCondition{}, "LastProbeTime", "LastTransitionTime"),
}

func conditionPair(first, final batchv1.JobConditionType, reason, message string) []batchv1.JobCondition {
	return []batchv1.JobCondition{
		{Type: first, Status: corev1.ConditionTrue, Reason: reason, Message: message},
		{Type: final, Status: corev1.ConditionTrue, Reason: reason, Message: message},
	}
}

func TestJobSucceedsWithCompletionsAndParallelism(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-a", func(j *batchv1.Job) {
		j.Spec.Completions = ptr.To[int32](3)
		j.Spec.Parallelism = ptr.To[int32](2)
	}))

	pods := waitActivePods(t, s, job.UID, 2)
	for _, p := range pods {
		if diff := cmp.Diff(wantPodMeta(job), podMeta(p)); diff != "" {
			t.Errorf("pod %s metadata (-want +got):\n%s", p.Name, diff)
		}
		// The template, with what the pods' admission adds to every pod:
		// DefaultTolerationSeconds' tolerations.
		want := job.Spec.Template.Spec.DeepCopy()
		for _, key := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
			want.Tolerations = append(want.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
		}
		if diff := cmp.Diff(*want, p.Spec); diff != "" {
			t.Errorf("pod %s spec (-want +got):\n%s", p.Name, diff)
		}
	}
	runPod(t, s, pods[0], true, 0)
	runPod(t, s, pods[1], false, 0)
	waitJob(t, s, "job-a", func(st batchv1.JobStatus) error {
		if st.Active != 2 || ptr.Deref(st.Ready, -1) != 1 || st.StartTime == nil {
			return fmt.Errorf("active %d ready %v", st.Active, st.Ready)
		}
		return nil
	})

	finishPod(t, s, pods[0], 0, time.Now())
	finishPod(t, s, pods[1], 0, time.Now())
	third := waitActivePods(t, s, job.UID, 1)[0]
	finishPod(t, s, third, 0, time.Now())

	got := waitJob(t, s, "job-a", hasCondition(batchv1.JobComplete))
	want := batchv1.JobStatus{
		Succeeded:               3,
		Ready:                   ptr.To[int32](0),
		Terminating:             ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
		Conditions:              conditionPair(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonCompletionsReached, msgCompletionsReached),
	}
	if diff := cmp.Diff(want, got.Status, ignoreTimes); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if got.Status.CompletionTime == nil || got.Status.StartTime == nil {
		t.Errorf("startTime %v completionTime %v, want both set", got.Status.StartTime, got.Status.CompletionTime)
	}
	for _, p := range podsOf(t, s, job.UID) {
		if hasTrackingFinalizer(p) {
			t.Errorf("pod %s still has the tracking finalizer", p.Name)
		}
	}
}

// podMeta is the part of a pod's metadata the controller decides.
type podMetaView struct {
	GenerateName    string
	Labels          map[string]string
	Annotations     map[string]string
	Finalizers      []string
	OwnerReferences []metav1.OwnerReference
}

func podMeta(p *corev1.Pod) podMetaView {
	return podMetaView{p.GenerateName, p.Labels, p.Annotations, p.Finalizers, p.OwnerReferences}
}

func wantPodMeta(job *batchv1.Job) podMetaView {
	return podMetaView{
		GenerateName: job.Name + "-",
		Labels:       job.Spec.Template.Labels,
		Finalizers:   []string{batchv1.JobTrackingFinalizer},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}},
	}
}

func TestJobWithoutCompletionsCompletesWhenAllFinish(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-b", func(j *batchv1.Job) {
		j.Spec.Completions = nil
		j.Spec.Parallelism = ptr.To[int32](2)
	}))
	pods := waitActivePods(t, s, job.UID, 2)
	runPod(t, s, pods[1], true, 0)
	finishPod(t, s, pods[0], 0, time.Now())
	waitJob(t, s, "job-b", func(st batchv1.JobStatus) error {
		if st.Succeeded != 1 || st.Active != 1 {
			return fmt.Errorf("succeeded %d active %d", st.Succeeded, st.Active)
		}
		return nil
	})
	if got := getJobT(t, s, "job-b"); kube.IsJobFinished(got) {
		t.Fatalf("job finished while a pod still runs: %+v", got.Status)
	}
	if n := len(filterPods(podsOf(t, s, job.UID), isActivePod)); n != 1 {
		t.Errorf("%d active pods after the first success, want 1 (no replacement)", n)
	}
	finishPod(t, s, pods[1], 0, time.Now())
	got := waitJob(t, s, "job-b", hasCondition(batchv1.JobComplete))
	if got.Status.Succeeded != 2 {
		t.Errorf("succeeded = %d, want 2", got.Status.Succeeded)
	}
}

func TestJobFailsAtBackoffLimit(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-c", func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](1)
	}))
	for i := 0; i < 2; i++ {
		p := waitActivePods(t, s, job.UID, 1)[0]
		finishPod(t, s, p, 1, time.Now())
		waitJob(t, s, "job-c", func(st batchv1.JobStatus) error {
			if st.Failed != int32(i+1) {
				return fmt.Errorf("failed %d", st.Failed)
			}
			return nil
		})
	}
	got := waitJob(t, s, "job-c", hasCondition(batchv1.JobFailed))
	want := batchv1.JobStatus{
		Failed:                  2,
		Ready:                   ptr.To[int32](0),
		Terminating:             ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
		Conditions:              conditionPair(batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded),
	}
	if diff := cmp.Diff(want, got.Status, ignoreTimes); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if got.Status.CompletionTime != nil {
		t.Errorf("completionTime %v on a failed job", got.Status.CompletionTime)
	}
	if n := len(podsOf(t, s, job.UID)); n != 2 {
		t.Errorf("%d pods, want 2", n)
	}
}

func TestOnFailureRestartsCountTowardBackoffLimit(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-d", func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](2)
		j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}))
	p := waitActivePods(t, s, job.UID, 1)[0]
	runPod(t, s, p, true, 1)
	waitJob(t, s, "job-d", func(st batchv1.JobStatus) error {
		if ptr.Deref(st.Ready, 0) != 1 {
			return fmt.Errorf("ready %v", st.Ready)
		}
		return nil
	})
	runPod(t, s, p, true, 2)

	// The limit is reached: FailureTarget at once, the running pod is
	// deleted with its grace period, Failed once it is gone.
	waitJob(t, s, "job-d", hasCondition(batchv1.JobFailureTarget))
	got := getJobT(t, s, "job-d")
	if kube.IsJobConditionTrue(got.Status.Conditions, batchv1.JobFailed) {
		t.Fatalf("Failed before the pod terminated: %+v", got.Status)
	}
	if ptr.Deref(got.Status.Terminating, 0) != 1 || got.Status.Failed != 1 {
		t.Errorf("terminating %v failed %d, want 1 and 1", got.Status.Terminating, got.Status.Failed)
	}
	deleted := podsOf(t, s, job.UID)[0]
	if deleted.DeletionTimestamp == nil || ptr.Deref(deleted.DeletionGracePeriodSeconds, -1) != 30 {
		t.Fatalf("pod deletion %v grace %v, want graceful with 30s", deleted.DeletionTimestamp, deleted.DeletionGracePeriodSeconds)
	}
	stopDeletedPod(t, s, deleted)

	got = waitJob(t, s, "job-d", hasCondition(batchv1.JobFailed))
	want := batchv1.JobStatus{
		Failed:                  1,
		Ready:                   ptr.To[int32](0),
		Terminating:             ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
		Conditions:              conditionPair(batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded),
	}
	if diff := cmp.Diff(want, got.Status, ignoreTimes); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	waitFor(t, "pod removed", func() error {
		if n := len(podsOf(t, s, job.UID)); n != 0 {
			return fmt.Errorf("%d pods", n)
		}
		return nil
	})
}

func TestParallelismChangesTakeEffect(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-e", func(j *batchv1.Job) {
		j.Spec.Completions = ptr.To[int32](10)
		j.Spec.Parallelism = ptr.To[int32](3)
	}))
	pods := waitActivePods(t, s, job.UID, 3)
	runPod(t, s, pods[0], true, 0)
	runPod(t, s, pods[1], true, 0)
	// pods[2] stays pending and unscheduled: it goes first.

	modifyJob(t, s, "job-e", func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](2) })
	waitActivePods(t, s, job.UID, 2)
	waitFor(t, "unscheduled pod removed", func() error {
		if _, err := s.Get(db.Pods, testNS, pods[2].Name); err == nil {
			return fmt.Errorf("pod %s still stored", pods[2].Name)
		}
		return nil
	})

	modifyJob(t, s, "job-e", func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](0) })
	waitActivePods(t, s, job.UID, 0)
	got := waitJob(t, s, "job-e", func(st batchv1.JobStatus) error {
		if st.Active != 0 || ptr.Deref(st.Terminating, 0) != 2 {
			return fmt.Errorf("active %d terminating %v", st.Active, st.Terminating)
		}
		return nil
	})
	if got.Status.Failed != 0 || got.Status.Succeeded != 0 {
		t.Errorf("removed pods were counted: %+v", got.Status)
	}
	for _, p := range podsOf(t, s, job.UID) {
		if hasTrackingFinalizer(p) {
			t.Errorf("deleted pod %s keeps the tracking finalizer", p.Name)
		}
		stopDeletedPod(t, s, p)
	}

	modifyJob(t, s, "job-e", func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](4) })
	waitActivePods(t, s, job.UID, 4)
	waitJob(t, s, "job-e", func(st batchv1.JobStatus) error {
		if st.Active != 4 || ptr.Deref(st.Terminating, -1) != 0 || st.Failed != 0 {
			return fmt.Errorf("active %d terminating %v failed %d", st.Active, st.Terminating, st.Failed)
		}
		return nil
	})
}

func TestBackoffDelaysReplacement(t *testing.T) {
	s := openStore(t)
	start := time.Now().Truncate(time.Second)
	clk := clocktesting.NewFakeClock(start)
	startController(t, Config{Store: s, Clock: clk, BackoffBase: 10 * time.Second, BackoffMax: 15 * time.Second})
	job := createJob(t, s, newJob("job-f"))

	for i, wait := range []time.Duration{10 * time.Second, 15 * time.Second} {
		p := waitActivePods(t, s, job.UID, 1)[0]
		finishPod(t, s, p, 1, clk.Now())
		waitJob(t, s, "job-f", func(st batchv1.JobStatus) error {
			if st.Failed != int32(i+1) {
				return fmt.Errorf("failed %d", st.Failed)
			}
			return nil
		})
		waitFor(t, "the backoff timer", func() error {
			if !clk.HasWaiters() {
				return fmt.Errorf("no timer")
			}
			return nil
		})
		clk.Step(wait - time.Second)
		if n := len(filterPods(podsOf(t, s, job.UID), isActivePod)); n != 0 {
			t.Fatalf("failure %d: replacement created before the backoff passed", i+1)
		}
		clk.Step(time.Second)
	}
	waitActivePods(t, s, job.UID, 1)
}

func TestBackoffSurvivesRestart(t *testing.T) {
	s := openStore(t)
	start := time.Now().Truncate(time.Second)
	clk := clocktesting.NewFakeClock(start)
	cfg := Config{Store: s, Clock: clk, BackoffBase: 10 * time.Second}
	stop := startController(t, cfg)
	job := createJob(t, s, newJob("job-g"))
	p := waitActivePods(t, s, job.UID, 1)[0]
	finishPod(t, s, p, 1, clk.Now())
	waitJob(t, s, "job-g", func(st batchv1.JobStatus) error {
		if st.Failed != 1 {
			return fmt.Errorf("failed %d", st.Failed)
		}
		return nil
	})
	stop()

	clk.Step(5 * time.Second)
	startController(t, cfg)
	waitFor(t, "the backoff timer", func() error {
		if !clk.HasWaiters() {
			return fmt.Errorf("no timer")
		}
		return nil
	})
	if n := len(filterPods(podsOf(t, s, job.UID), isActivePod)); n != 0 {
		t.Fatalf("replacement created 5s after the failure, want after 10s")
	}
	clk.Step(5 * time.Second)
	waitActivePods(t, s, job.UID, 1)
}

func TestRestartMidJobDoesNotDoubleCount(t *testing.T) {
	s := openStore(t)
	stop := startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-h", func(j *batchv1.Job) {
		j.Spec.Completions = ptr.To[int32](4)
		j.Spec.Parallelism = ptr.To[int32](3)
	}))
	pods := waitActivePods(t, s, job.UID, 3)
	finishPod(t, s, pods[0], 0, time.Now())
	waitJob(t, s, "job-h", func(st batchv1.JobStatus) error {
		if st.Succeeded != 1 {
			return fmt.Errorf("succeeded %d", st.Succeeded)
		}
		return nil
	})
	stop()

	// While the controller is down, one pod succeeds and one fails.
	finishPod(t, s, pods[1], 0, time.Now())
	finishPod(t, s, pods[2], 1, time.Now())
	startController(t, Config{Store: s})
	waitJob(t, s, "job-h", func(st batchv1.JobStatus) error {
		if st.Succeeded != 2 || st.Failed != 1 {
			return fmt.Errorf("succeeded %d failed %d", st.Succeeded, st.Failed)
		}
		return nil
	})
	for _, p := range waitActivePods(t, s, job.UID, 2) {
		finishPod(t, s, p, 0, time.Now())
	}
	got := waitJob(t, s, "job-h", hasCondition(batchv1.JobComplete))
	if got.Status.Succeeded != 4 || got.Status.Failed != 1 {
		t.Errorf("succeeded %d failed %d, want 4 and 1", got.Status.Succeeded, got.Status.Failed)
	}
}

func TestDeletedJobReleasesPods(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-i", func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](2); j.Spec.Completions = nil }))
	pods := waitActivePods(t, s, job.UID, 2)
	if _, err := s.Delete(db.Jobs, testNS, "job-i"); err != nil {
		t.Fatalf("deleting job: %v", err)
	}
	waitFor(t, "finalizers removed", func() error {
		for _, p := range pods {
			obj, err := s.Get(db.Pods, testNS, p.Name)
			if err != nil {
				return err
			}
			if hasTrackingFinalizer(obj.(*corev1.Pod)) {
				return fmt.Errorf("pod %s keeps the finalizer", p.Name)
			}
		}
		return nil
	})
}

func TestOrphanedPodIsReleased(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-j"))
	p := waitActivePods(t, s, job.UID, 1)[0]
	// Orphan propagation: the Job is marked deleted, held by the orphan
	// finalizer, while the garbage collector strips the pods'
	// ownerReferences (a Job not being deleted would adopt them back).
	modifyJob(t, s, "job-j", func(j *batchv1.Job) { j.Finalizers = []string{metav1.FinalizerOrphanDependents} })
	if _, _, err := s.DeleteGracefully(db.Jobs, testNS, "job-j", 0); err != nil {
		t.Fatalf("deleting job: %v", err)
	}
	modifyPod(t, s, p, func(p *corev1.Pod) { p.OwnerReferences = nil })
	waitFor(t, "finalizer removed", func() error {
		obj, err := s.Get(db.Pods, testNS, p.Name)
		if err != nil {
			return err
		}
		if hasTrackingFinalizer(obj.(*corev1.Pod)) {
			return fmt.Errorf("pod keeps the finalizer")
		}
		return nil
	})
}

func TestJobBeingDeletedReleasesPodsAndCreatesNone(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-k", func(j *batchv1.Job) {
		j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](5)
	}))
	pods := waitActivePods(t, s, job.UID, 2)
	runPod(t, s, pods[0], true, 0)
	runPod(t, s, pods[1], true, 0)
	// Foreground deletion as the API server does it.
	modifyJob(t, s, "job-k", func(j *batchv1.Job) { j.Finalizers = []string{metav1.FinalizerDeleteDependents} })
	if _, _, err := s.DeleteGracefully(db.Jobs, testNS, "job-k", 0); err != nil {
		t.Fatalf("deleting job: %v", err)
	}
	waitFor(t, "finalizers released", func() error {
		for _, p := range podsOf(t, s, job.UID) {
			if hasTrackingFinalizer(p) {
				return fmt.Errorf("pod %s keeps the finalizer", p.Name)
			}
		}
		return nil
	})
	finishPod(t, s, pods[0], 0, time.Now())
	waitJob(t, s, "job-k", func(st batchv1.JobStatus) error {
		if st.Active != 1 {
			return fmt.Errorf("active %d", st.Active)
		}
		return nil
	})
	if n := len(podsOf(t, s, job.UID)); n != 2 {
		t.Errorf("%d pods, want 2: a Job being deleted creates none", n)
	}
}

func TestCountedPodsLeaveTheHotPath(t *testing.T) {
	s := openStore(t)
	cfg := Config{Store: s}
	c := New(cfg)
	c.cfg.BackoffBase = time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() { cancel(); <-done }()

	job := createJob(t, s, newJob("job-l", func(j *batchv1.Job) {
		j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](5), ptr.To[int32](40)
	}))
	for finished := 0; finished < 40; {
		for _, p := range waitActivePods(t, s, job.UID, min(5, 40-finished)) {
			finishPod(t, s, p, 0, time.Now())
			finished++
		}
		waitJob(t, s, "job-l", func(st batchv1.JobStatus) error {
			if int(st.Succeeded) != finished {
				return fmt.Errorf("succeeded %d, want %d", st.Succeeded, finished)
			}
			return nil
		})
	}
	waitJob(t, s, "job-l", hasCondition(batchv1.JobComplete))
	waitFor(t, "no tracked pod left", func() error {
		tracked, _ := c.index.tracked(jobKey{testNS, "job-l"}, job.UID)
		if n := len(tracked[job.UID]); n != 0 {
			return fmt.Errorf("%d pods still tracked", n)
		}
		return nil
	})
}
