package jobcontroller

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Recorder records Events on objects; package events' *Recorder (with
// source component "job-controller") implements it.
type Recorder interface {
	Event(obj runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

type nopRecorder struct{}

func (nopRecorder) Event(runtime.Object, string, string, string, ...any) {}

// jobEvent is an Event on a Job.
type jobEvent struct{ typ, reason, message string }

// recordEvents records the Events of a committed sync, as the Kubernetes
// Job controller does: one per pod created, refused or deleted, and the
// Job's finishing, suspension and resumption.
func (c *Controller) recordEvents(res syncResult) {
	if res.job == nil || res.plan == nil {
		return
	}
	rec := c.cfg.Recorder
	for _, p := range res.created {
		rec.Event(res.job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", p.Name)
	}
	for _, err := range res.refused {
		rec.Event(res.job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
	}
	for _, p := range res.plan.deletes {
		rec.Event(res.job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
	}
	for _, ev := range statusEvents(res.job, res.before, res.plan.status) {
		rec.Event(res.job, ev.typ, ev.reason, "%s", ev.message)
	}
}

// statusEvents are the Events of a change of the Job's conditions from
// before to the status now: "Completed" when it completes, a Warning with
// the reason and message of its Failed condition when it fails,
// "Suspended" and "Resumed" when its Suspended condition turns.
//
// NOTE: Kubernetes' recordJobFinished and the suspend handling of syncJob.
func statusEvents(job *batchv1.Job, before []batchv1.JobCondition, now batchv1.JobStatus) []jobEvent {
	var out []jobEvent
	if c := newlyTrue(before, now.Conditions, batchv1.JobComplete); c != nil {
		if job.Spec.Completions != nil && now.Succeeded > *job.Spec.Completions {
			out = append(out, jobEvent{corev1.EventTypeWarning, "TooManySucceededPods",
				"Too many succeeded pods running after completion count reached"})
		}
		out = append(out, jobEvent{corev1.EventTypeNormal, "Completed", "Job completed"})
	}
	if c := newlyTrue(before, now.Conditions, batchv1.JobFailed); c != nil {
		out = append(out, jobEvent{corev1.EventTypeWarning, c.Reason, c.Message})
	}
	was, is := conditionStatus(before, batchv1.JobSuspended), conditionStatus(now.Conditions, batchv1.JobSuspended)
	switch {
	case is == corev1.ConditionTrue && was != corev1.ConditionTrue:
		out = append(out, jobEvent{corev1.EventTypeNormal, "Suspended", "Job suspended"})
	case is == corev1.ConditionFalse && was == corev1.ConditionTrue:
		out = append(out, jobEvent{corev1.EventTypeNormal, "Resumed", "Job resumed"})
	}
	return out
}

// newlyTrue returns the condition t of now if it is True there but was not
// True before.
func newlyTrue(before, now []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	if conditionStatus(before, t) == corev1.ConditionTrue {
		return nil
	}
	for i := range now {
		if now[i].Type == t && now[i].Status == corev1.ConditionTrue {
			return &now[i]
		}
	}
	return nil
}

func conditionStatus(conds []batchv1.JobCondition, t batchv1.JobConditionType) corev1.ConditionStatus {
	for _, c := range conds {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}
