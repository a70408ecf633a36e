package jobcontroller

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/kube"
)

// syncInput is everything one sync decides from, read in one transaction.
type syncInput struct {
	job         *batchv1.Job
	pods        []*corev1.Pod // the Job's tracked pods (not both finished and counted)
	backoff     backoffRecord // failures counted before this sync
	now         time.Time
	backoffBase time.Duration
	backoffMax  time.Duration
}

// syncPlan is what one sync does, applied in one transaction.
type syncPlan struct {
	status  batchv1.JobStatus
	creates []podToCreate // pods to create
	deletes []*corev1.Pod // pods to delete gracefully
	release []*corev1.Pod // pods whose tracking finalizer comes off (counted, or given up)
	backoff backoffRecord // the record once this plan is committed
	requeue time.Duration // sync again after this long; 0: no timed sync needed
	// finishing: a finishing condition was met, so the pods were not
	// managed (the sync's action is "reconciling" in the metrics).
	finishing bool
}

// decide is the Job controller's policy for one sync of a Job that is not
// finished: count newly finished pods, pick at most one finishing
// condition, create or delete pods toward the wanted number of active pods,
// and compute the new status.
//
// NOTE: the structure of Kubernetes' syncJob, manageJob and
// trackJobStatusAndRemoveFinalizers, with counting and finalizer removal in
// the same transaction so uncountedTerminatedPods stays empty.
func decide(in syncInput) syncPlan {
	job := in.job.DeepCopy()
	pods := classifyPods(in.pods)
	var plan syncPlan
	now := in.now

	newSucceeded, newFailed := newlyFinished(job, pods.all)
	succeeded := job.Status.Succeeded + int32(len(newSucceeded))
	failed := job.Status.Failed + countedFailures(job, newFailed)
	if job.Status.StartTime == nil && !isSuspended(job) {
		t := metav1.NewTime(now)
		job.Status.StartTime = &t
	}
	plan.backoff = in.backoff.withFinished(finishedTimes(newSucceeded), finishedTimes(newFailed))

	finished := finishingCondition(job, pods, failed, now)
	if finished == nil {
		plan.requeue = deadlineRequeue(job, now)
	}
	idx := indexedState(job, pods)
	if finished == nil {
		finished = idx.finishing(job, now)
	}
	if idx.indexed {
		succeeded = idx.succeededTotal()
	}

	active, terminating, ready := int32(len(pods.active)), pods.terminating, pods.ready
	released := map[types.UID]bool{}
	plan.finishing = finished != nil
	if finished != nil {
		// Remove the active pods of a finishing Job; they are counted below,
		// as failures unless the Job succeeded.
		plan.deletes = pods.active
		active, terminating, ready = 0, terminating+int32(len(pods.active)), 0
	} else {
		manageCalled := false
		if job.DeletionTimestamp == nil {
			m := manage(manageInput{job: job, pods: pods, succeeded: succeeded, idx: idx, backoff: plan.backoff, in: in})
			active, terminating, ready = m.active, terminating+m.deleted, ready-m.deletedReady
			plan.creates, plan.deletes = m.creates, m.deletes
			plan.requeue = earliest(plan.requeue, m.requeue)
			for _, p := range m.deletes {
				if hasTrackingFinalizer(p) {
					plan.release = append(plan.release, p)
					released[p.UID] = true
				}
			}
			manageCalled = true
		}
		if isComplete(job, succeeded, active) {
			finished = successCriteriaMet(batchv1.JobReasonCompletionsReached, msgCompletionsReached, now)
		} else if manageCalled {
			updateSuspendCondition(job, now)
		}
	}

	plan.release = append(plan.release, countFinished(job, pods.all, finished, idx, released)...)
	idx.writeStatus(job)
	finishConditions(job, finished, terminating, now)

	job.Status.Active = active
	job.Status.Ready = &ready
	job.Status.Terminating = &terminating
	job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	plan.status = job.Status
	return plan
}

// isComplete reports whether enough pods succeeded and none is active. A
// Job without completions is complete once any pod succeeded and the rest
// finished.
func isComplete(job *batchv1.Job, succeeded, active int32) bool {
	if active != 0 {
		return false
	}
	if job.Spec.Completions == nil {
		return succeeded > 0
	}
	return succeeded >= *job.Spec.Completions
}

// countFinished counts the finished pods that still carry the tracking
// finalizer into job.Status and returns the pods whose finalizer comes off:
// every pod once the Job is being deleted or finishing, else succeeded and
// failed pods (except those whose removal waits for their index's retry).
// Pods in skip already lose it.
func countFinished(job *batchv1.Job, pods []*corev1.Pod, finished *batchv1.JobCondition, idx *indexState, skip map[types.UID]bool) []*corev1.Pod {
	failing := finished != nil && finished.Type != batchv1.JobSuccessCriteriaMet
	var release []*corev1.Pod
	for _, p := range pods {
		if !hasTrackingFinalizer(p) || skip[p.UID] {
			continue
		}
		consideredFailed := isPodFailed(p, job)
		removable := job.DeletionTimestamp != nil || finished != nil ||
			p.Status.Phase == corev1.PodSucceeded || (consideredFailed && !idx.delaysRemoval(p))
		if !removable {
			continue
		}
		release = append(release, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			if !idx.indexed {
				job.Status.Succeeded++
			}
		case consideredFailed || failing:
			if hasValidIndex(job, p) && countsAsFailure(job, p) {
				job.Status.Failed++
			}
		}
	}
	return release
}

// finishConditions writes the finishing condition pair: FailureTarget or
// SuccessCriteriaMet as soon as the criterion is met, and Failed or
// Complete (same reason and message) once no pod is terminating.
func finishConditions(job *batchv1.Job, finished *batchv1.JobCondition, terminating int32, now time.Time) {
	if finished == nil {
		return
	}
	final := *finished
	switch finished.Type {
	case batchv1.JobFailureTarget:
		job.Status.Conditions = append(job.Status.Conditions, *finished)
		final = newCondition(batchv1.JobFailed, corev1.ConditionTrue, finished.Reason, finished.Message, now)
	case batchv1.JobSuccessCriteriaMet:
		if !kube.IsJobConditionTrue(job.Status.Conditions, batchv1.JobSuccessCriteriaMet) {
			job.Status.Conditions = append(job.Status.Conditions, *finished)
		}
		final = newCondition(batchv1.JobComplete, corev1.ConditionTrue, finished.Reason, finished.Message, now)
	}
	if terminating > 0 {
		return
	}
	job.Status.Conditions, _ = ensureCondition(job.Status.Conditions, final.Type, final.Status, final.Reason, final.Message, now)
	if final.Type == batchv1.JobComplete {
		t := findCondition(job.Status.Conditions, batchv1.JobComplete).LastTransitionTime
		job.Status.CompletionTime = &t
	}
}

// updateSuspendCondition keeps the Suspended condition in step with
// spec.suspend: True when suspended; False (JobResumed) once resumed, which
// also restarts startTime.
func updateSuspendCondition(job *batchv1.Job, now time.Time) {
	if isSuspended(job) {
		job.Status.Conditions, _ = ensureCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, reasonJobSuspended, msgJobSuspended, now)
		return
	}
	var changed bool
	job.Status.Conditions, changed = ensureCondition(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, reasonJobResumed, msgJobResumed, now)
	if changed {
		// NOTE: Kubernetes resets startTime on resume so that
		// activeDeadlineSeconds counts continuous activity.
		t := metav1.NewTime(now)
		job.Status.StartTime = &t
	}
}

// earliest is the smaller positive of two requeue delays (0 = none).
func earliest(a, b time.Duration) time.Duration {
	if a <= 0 {
		return b
	}
	if b <= 0 || a < b {
		return a
	}
	return b
}
