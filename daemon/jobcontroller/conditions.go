package jobcontroller

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition messages written by the controller.
//
// NOTE: the exact strings of Kubernetes 1.34 (KUBERNETES-FACTS.md "Job status").
const (
	msgCompletionsReached   = "Reached expected number of succeeded pods"
	msgBackoffLimitExceeded = "Job has reached the specified backoff limit"
	msgDeadlineExceeded     = "Job was active longer than specified deadline"
	msgMaxFailedIndexes     = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes        = "Job has failed indexes"
	reasonJobSuspended      = "JobSuspended"
	msgJobSuspended         = "Job suspended"
	reasonJobResumed        = "JobResumed"
	msgJobResumed           = "Job resumed"
)

// newCondition is a condition whose probe and transition times are now.
func newCondition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) batchv1.JobCondition {
	return batchv1.JobCondition{
		Type:               t,
		Status:             status,
		LastProbeTime:      metav1.NewTime(now),
		LastTransitionTime: metav1.NewTime(now),
		Reason:             reason,
		Message:            message,
	}
}

// findCondition returns the condition of type t in list, or nil.
func findCondition(list []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}

// ensureCondition sets the condition of type t to status/reason/message,
// appending it if absent (but never appending a False one), and reports
// whether list changed. Times change only when something else does.
func ensureCondition(list []batchv1.JobCondition, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) ([]batchv1.JobCondition, bool) {
	if c := findCondition(list, t); c != nil {
		if c.Status == status && c.Reason == reason && c.Message == message {
			return list, false
		}
		*c = newCondition(t, status, reason, message, now)
		return list, true
	}
	if status == corev1.ConditionFalse {
		return list, false
	}
	return append(list, newCondition(t, status, reason, message, now)), true
}

// finishingCondition decides, in Kubernetes' fixed order, whether the Job
// already has, or now reaches, a finishing criterion: an existing
// SuccessCriteriaMet; an existing FailureTarget (returned as the Failed
// condition it leads to); a FailJob rule of the podFailurePolicy; the
// backoff limit; the active deadline. It returns nil if none applies.
// failed is the failure count including the failures counted in this sync.
func finishingCondition(job *batchv1.Job, pods podSet, failed int32, now time.Time) *batchv1.JobCondition {
	conds := job.Status.Conditions
	if c := findCondition(conds, batchv1.JobSuccessCriteriaMet); c != nil && c.Status == corev1.ConditionTrue {
		out := *c
		return &out
	}
	if c := findCondition(conds, batchv1.JobFailureTarget); c != nil && c.Status == corev1.ConditionTrue {
		out := newCondition(batchv1.JobFailed, corev1.ConditionTrue, c.Reason, c.Message, now)
		return &out
	}
	if msg, ok := podFailurePolicyFailJob(job, pods.all); ok {
		return failureTarget(batchv1.JobReasonPodFailurePolicy, msg, now)
	}
	if failed > backoffLimit(job) || pastBackoffLimitOnFailure(job, pods.all) {
		return failureTarget(batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimitExceeded, now)
	}
	if pastActiveDeadline(job, now) {
		return failureTarget(batchv1.JobReasonDeadlineExceeded, msgDeadlineExceeded, now)
	}
	return nil
}

func failureTarget(reason, message string, now time.Time) *batchv1.JobCondition {
	c := newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, reason, message, now)
	return &c
}

func successCriteriaMet(reason, message string, now time.Time) *batchv1.JobCondition {
	c := newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, reason, message, now)
	return &c
}

// backoffLimit is spec.backoffLimit (defaulted to 6 by the API server).
func backoffLimit(job *batchv1.Job) int32 {
	if job.Spec.BackoffLimit == nil {
		return 6
	}
	return *job.Spec.BackoffLimit
}

// pastBackoffLimitOnFailure reports whether, with restartPolicy OnFailure,
// the container restarts of the Job's pending and running pods reach the
// backoff limit (exceed it when the limit is 0).
//
// NOTE: as Kubernetes' pastBackoffLimitOnFailure: restarts are checked on
// their own, beside the failed-pod count, not added to it.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, s := range p.Status.InitContainerStatuses {
			restarts += s.RestartCount
		}
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
	}
	limit := backoffLimit(job)
	if limit == 0 {
		return restarts > 0
	}
	return restarts >= limit
}

// pastActiveDeadline reports whether a running (not suspended) Job has been
// active for activeDeadlineSeconds.
func pastActiveDeadline(job *batchv1.Job, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || isSuspended(job) {
		return false
	}
	allowed := time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second
	return now.Sub(job.Status.StartTime.Time) >= allowed
}

// deadlineRequeue is how long until the active deadline passes, or 0 if the
// Job has no running deadline.
func deadlineRequeue(job *batchv1.Job, now time.Time) time.Duration {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || isSuspended(job) {
		return 0
	}
	allowed := time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second
	return allowed - now.Sub(job.Status.StartTime.Time)
}

func isSuspended(job *batchv1.Job) bool {
	return job.Spec.Suspend != nil && *job.Spec.Suspend
}
