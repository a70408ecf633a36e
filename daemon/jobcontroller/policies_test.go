package jobcontroller

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// The controller tests of the Job API beyond the walking skeleton.

func withFailurePolicy(rules ...batchv1.PodFailurePolicyRule) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
		j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) // the API server's default with a podFailurePolicy
	}
}

func exitCodeRule(action batchv1.PodFailurePolicyAction, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
		Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes,
	}}
}

func TestPodFailurePolicyFailJob(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-p", withFailurePolicy(exitCodeRule(batchv1.PodFailurePolicyActionFailJob, 42)), func(j *batchv1.Job) {
		j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
	}))
	pods := waitActivePods(t, s, job.UID, 2)
	runPod(t, s, pods[1], true, 0)
	finishPod(t, s, pods[0], 42, time.Now())

	msg := fmt.Sprintf("Container c for pod default/%s failed with exit code 42 matching FailJob rule at index 0", pods[0].Name)
	waitJob(t, s, "job-p", hasCondition(batchv1.JobFailureTarget))
	stopDeletedPod(t, s, waitDeleting(t, s, pods[1].Name))
	got := waitJob(t, s, "job-p", hasCondition(batchv1.JobFailed))
	want := batchv1.JobStatus{
		Failed:                  2,
		Ready:                   ptr.To[int32](0),
		Terminating:             ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
		Conditions:              conditionPair(batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobReasonPodFailurePolicy, msg),
	}
	if diff := cmp.Diff(want, got.Status, ignoreTimes); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

// waitDeleting waits until the pod is marked for deletion and returns it.
func waitDeleting(t *testing.T, s *db.Store, name string) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	waitFor(t, "pod "+name+" deleting", func() error {
		obj, err := s.Get(db.Pods, testNS, name)
		if err != nil {
			return err
		}
		p = obj.(*corev1.Pod)
		if p.DeletionTimestamp == nil {
			return fmt.Errorf("not deleting")
		}
		return nil
	})
	return p
}

func TestPodFailurePolicyIgnoreAndReplacementWaits(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-q", withFailurePolicy(exitCodeRule(batchv1.PodFailurePolicyActionIgnore, 3)), func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](0)
	}))
	first := waitActivePods(t, s, job.UID, 1)[0]
	finishPod(t, s, first, 3, time.Now())
	second := waitActivePods(t, s, job.UID, 1)[0]
	if st := getJobT(t, s, "job-q").Status; st.Failed != 0 || kube.IsJobFinished(getJobT(t, s, "job-q")) {
		t.Fatalf("an ignored failure was counted: %+v", st)
	}

	// A deleted pod is replaced only once it is terminal.
	runPod(t, s, second, true, 0)
	if _, _, err := s.DeleteGracefully(db.Pods, testNS, second.Name, 30); err != nil {
		t.Fatalf("deleting pod: %v", err)
	}
	waitJob(t, s, "job-q", func(st batchv1.JobStatus) error {
		if st.Active != 0 || ptr.Deref(st.Terminating, 0) != 1 {
			return fmt.Errorf("active %d terminating %v", st.Active, st.Terminating)
		}
		return nil
	})
	if n := len(podsOf(t, s, job.UID)); n != 2 {
		t.Fatalf("%d pods while one terminates, want 2 (no replacement yet)", n)
	}
	modifyPod(t, s, second, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, FinishedAt: metav1Now()},
		}}}
	})
	third := waitActivePods(t, s, job.UID, 1)[0]
	finishPod(t, s, third, 1, time.Now())
	got := waitJob(t, s, "job-q", hasCondition(batchv1.JobFailed))
	if got.Status.Failed != 1 {
		t.Errorf("failed = %d, want 1 (ignored failures not counted)", got.Status.Failed)
	}
}

func TestBackoffLimitPerIndex(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-r", indexed(3, 3), func(j *batchv1.Job) {
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
		j.Spec.BackoffLimit = ptr.To[int32](2147483647)
	}))
	pods := func() []*corev1.Pod { return podsOf(t, s, job.UID) }
	active := activeByIndex(t, job, pods, 0, 1, 2)
	for _, p := range active {
		if got := p.Annotations[batchv1.JobIndexFailureCountAnnotation]; got != "0" {
			t.Errorf("pod %s failure count %q, want 0", p.Name, got)
		}
	}
	waitJob(t, s, "job-r", func(st batchv1.JobStatus) error {
		if st.FailedIndexes == nil || *st.FailedIndexes != "" {
			return fmt.Errorf("failedIndexes %v, want \"\"", st.FailedIndexes)
		}
		return nil
	})

	finishPod(t, s, active[0], 1, time.Now())
	retry := activeByIndex(t, job, pods, 0, 1, 2)[0]
	if got := retry.Annotations[batchv1.JobIndexFailureCountAnnotation]; got != "1" {
		t.Errorf("retry failure count %q, want 1", got)
	}
	waitJob(t, s, "job-r", func(st batchv1.JobStatus) error {
		if st.Failed != 1 {
			return fmt.Errorf("failed %d", st.Failed)
		}
		return nil
	})
	finishPod(t, s, retry, 1, time.Now())
	waitJob(t, s, "job-r", func(st batchv1.JobStatus) error {
		if ptr.Deref(st.FailedIndexes, "") != "0" || st.Failed != 2 {
			return fmt.Errorf("failedIndexes %v failed %d", st.FailedIndexes, st.Failed)
		}
		return nil
	})
	if n := len(filterPods(pods(), isActivePod)); n != 2 {
		t.Errorf("%d active pods, want 2: a failed index is not retried", n)
	}
	finishPod(t, s, active[1], 0, time.Now())
	finishPod(t, s, active[2], 0, time.Now())
	got := waitJob(t, s, "job-r", hasCondition(batchv1.JobFailed))
	want := batchv1.JobStatus{
		Failed:                  2,
		Succeeded:               2,
		CompletedIndexes:        "1,2",
		FailedIndexes:           ptr.To("0"),
		Ready:                   ptr.To[int32](0),
		Terminating:             ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
		Conditions:              conditionPair(batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobReasonFailedIndexes, msgFailedIndexes),
	}
	if diff := cmp.Diff(want, got.Status, ignoreTimes); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestSuccessPolicy(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-s", indexed(3, 3), func(j *batchv1.Job) {
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
	}))
	pods := func() []*corev1.Pod { return podsOf(t, s, job.UID) }
	active := activeByIndex(t, job, pods, 0, 1, 2)
	runPod(t, s, active[1], true, 0)
	finishPod(t, s, active[0], 0, time.Now())
	waitJob(t, s, "job-s", hasCondition(batchv1.JobSuccessCriteriaMet))
	// index 1 runs and goes with its grace period; index 2 never started and goes at once.
	stopDeletedPod(t, s, waitDeleting(t, s, active[1].Name))
	got := waitJob(t, s, "job-s", hasCondition(batchv1.JobComplete))
	want := batchv1.JobStatus{
		Succeeded:               1,
		CompletedIndexes:        "0",
		Ready:                   ptr.To[int32](0),
		Terminating:             ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
		Conditions:              conditionPair(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonSuccessPolicy, "Matched rules at index 0"),
	}
	if diff := cmp.Diff(want, got.Status, ignoreTimes); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestSuspendAndResume(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s})
	job := createJob(t, s, newJob("job-t", func(j *batchv1.Job) {
		j.Spec.Suspend = ptr.To(true)
		j.Spec.Parallelism, j.Spec.Completions = ptr.To[int32](2), ptr.To[int32](2)
	}))
	got := waitJob(t, s, "job-t", hasCondition(batchv1.JobSuspended))
	if got.Status.StartTime != nil {
		t.Errorf("startTime %v on a Job created suspended", got.Status.StartTime)
	}
	suspended := []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue, Reason: "JobSuspended", Message: "Job suspended"}}
	if diff := cmp.Diff(suspended, got.Status.Conditions, ignoreTimes); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}

	modifyJob(t, s, "job-t", func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(false) })
	pods := waitActivePods(t, s, job.UID, 2)
	got = waitJob(t, s, "job-t", func(st batchv1.JobStatus) error {
		if st.StartTime == nil {
			return fmt.Errorf("no startTime")
		}
		return nil
	})
	resumed := []batchv1.JobCondition{{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse, Reason: "JobResumed", Message: "Job resumed"}}
	if diff := cmp.Diff(resumed, got.Status.Conditions, ignoreTimes); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}

	// Suspended while running: the pods go, uncounted.
	runPod(t, s, pods[0], true, 0)
	modifyJob(t, s, "job-t", func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
	waitActivePods(t, s, job.UID, 0)
	got = waitJob(t, s, "job-t", hasCondition(batchv1.JobSuspended))
	if got.Status.Failed != 0 || got.Status.StartTime == nil {
		t.Errorf("failed %d startTime %v, want 0 and kept", got.Status.Failed, got.Status.StartTime)
	}
}

func TestActiveDeadline(t *testing.T) {
	s := openStore(t)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	startController(t, Config{Store: s, Clock: clk})
	job := createJob(t, s, newJob("job-u", func(j *batchv1.Job) {
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](30)
	}))
	p := waitActivePods(t, s, job.UID, 1)[0]
	runPod(t, s, p, true, 0)
	waitFor(t, "the deadline timer", func() error {
		if !clk.HasWaiters() {
			return fmt.Errorf("no timer")
		}
		return nil
	})
	clk.Step(30 * time.Second)
	waitJob(t, s, "job-u", hasCondition(batchv1.JobFailureTarget))
	stopDeletedPod(t, s, waitDeleting(t, s, p.Name))
	got := waitJob(t, s, "job-u", hasCondition(batchv1.JobFailed))
	want := batchv1.JobStatus{
		Failed:                  1,
		Ready:                   ptr.To[int32](0),
		Terminating:             ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
		Conditions:              conditionPair(batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded, msgDeadlineExceeded),
	}
	if diff := cmp.Diff(want, got.Status, ignoreTimes); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestManagedByAnotherController(t *testing.T) {
	s := openStore(t)
	startController(t, Config{Store: s, Workers: 1})
	other := createJob(t, s, newJob("job-v", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To("example.com/other") }))
	ours := createJob(t, s, newJob("job-w", func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To(batchv1.JobControllerName) }))
	waitActivePods(t, s, ours.UID, 1)
	if n := len(podsOf(t, s, other.UID)); n != 0 {
		t.Errorf("%d pods for a Job managed elsewhere", n)
	}
	if st := getJobT(t, s, "job-v").Status; st.StartTime != nil {
		t.Errorf("status written for a Job managed elsewhere: %+v", st)
	}
}
