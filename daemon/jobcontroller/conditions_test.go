package jobcontroller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestEnsureCondition(t *testing.T) {
	suspended := newCondition(batchv1.JobSuspended, corev1.ConditionTrue, reasonJobSuspended, msgJobSuspended, at(0))
	cases := map[string]struct {
		list        []batchv1.JobCondition
		status      corev1.ConditionStatus
		reason, msg string
		want        []batchv1.JobCondition
		wantChanged bool
	}{
		"appends a true condition": {
			status: corev1.ConditionTrue, reason: reasonJobSuspended, msg: msgJobSuspended,
			want:        []batchv1.JobCondition{newCondition(batchv1.JobSuspended, corev1.ConditionTrue, reasonJobSuspended, msgJobSuspended, at(5))},
			wantChanged: true,
		},
		"never appends a false condition": {
			status: corev1.ConditionFalse, reason: reasonJobResumed, msg: msgJobResumed,
		},
		"same condition keeps its times": {
			list:   []batchv1.JobCondition{suspended},
			status: corev1.ConditionTrue, reason: reasonJobSuspended, msg: msgJobSuspended,
			want: []batchv1.JobCondition{suspended},
		},
		"flips in place": {
			list:   []batchv1.JobCondition{suspended},
			status: corev1.ConditionFalse, reason: reasonJobResumed, msg: msgJobResumed,
			want:        []batchv1.JobCondition{newCondition(batchv1.JobSuspended, corev1.ConditionFalse, reasonJobResumed, msgJobResumed, at(5))},
			wantChanged: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, changed := ensureCondition(tc.list, batchv1.JobSuspended, tc.status, tc.reason, tc.msg, at(5))
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFinishingCondition(t *testing.T) {
	failureTargetCond := cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 0)
	cases := map[string]struct {
		job    *batchv1.Job
		pods   []*corev1.Pod
		failed int32
		want   *batchv1.JobCondition
	}{
		"none": {job: testJob(nil), failed: 6},
		"existing SuccessCriteriaMet wins": {
			job: testJob(func(j *batchv1.Job) {
				j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, msgCompletionsReached, 0)}
			}),
			failed: 10,
			want:   ptr.To(cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, msgCompletionsReached, 0)),
		},
		"existing FailureTarget leads to Failed": {
			job:  testJob(func(j *batchv1.Job) { j.Status.Conditions = []batchv1.JobCondition{failureTargetCond} }),
			want: ptr.To(cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 1)),
		},
		"failures beyond the backoff limit": {
			job: testJob(nil), failed: 7,
			want: ptr.To(cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 1)),
		},
		"backoff limit before the deadline": {
			job:    testJob(func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](10) }),
			failed: 7,
			want:   ptr.To(cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 1)),
		},
		"active deadline passed": {
			job:  testJob(func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](100) }),
			want: ptr.To(cond(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, msgDeadlineExceeded, 1)),
		},
		"no deadline while suspended": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.ActiveDeadlineSeconds = ptr.To[int64](100)
				j.Spec.Suspend = ptr.To(true)
			}),
		},
		"OnFailure restarts of finished pods do not count": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.BackoffLimit = ptr.To[int32](1)
				j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodSucceeded, restarts(5))},
		},
		"OnFailure with backoffLimit 0 fails at the first restart": {
			job: testJob(func(j *batchv1.Job) {
				j.Spec.BackoffLimit = ptr.To[int32](0)
				j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			}),
			pods: []*corev1.Pod{testPod("a", corev1.PodPending, restarts(1))},
			want: ptr.To(cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, 1)),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := finishingCondition(tc.job, classifyPods(tc.pods), tc.failed, at(1))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("condition (-want +got):\n%s", diff)
			}
		})
	}
}
