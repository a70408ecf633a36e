package jobcontroller

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Defaults for Config.BackoffBase and Config.BackoffMax.
//
// NOTE: Kubernetes 1.34 DefaultJobPodFailureBackOff (10s) and
// MaxJobPodFailureBackOff (10m), pkg/controller/job/job_controller.go.
const (
	DefaultBackoffBase = 10 * time.Second
	DefaultBackoffMax  = 10 * time.Minute
)

// backoffRecord is what the replacement delay of failed pods is computed
// from: how many pods failed since the last success, and when the last one
// failed. It is rebuilt from the stored pods when the controller starts, so
// that a daemon restart does not reset the delay.
type backoffRecord struct {
	failuresAfterLastSuccess int32
	lastFailureTime          time.Time // zero when failuresAfterLastSuccess is 0
}

// withFinished returns the record after newly finished pods are counted.
// Any success resets the failure streak; only failures that finished after
// the latest success are kept.
//
// NOTE: as Kubernetes' newBackoffRecord (backoff_utils.go).
func (r backoffRecord) withFinished(succeeded, failed []time.Time) backoffRecord {
	sortTimes(succeeded)
	sortTimes(failed)
	if len(succeeded) == 0 {
		if len(failed) == 0 {
			return r
		}
		return backoffRecord{
			failuresAfterLastSuccess: r.failuresAfterLastSuccess + int32(len(failed)),
			lastFailureTime:          failed[len(failed)-1],
		}
	}
	lastSuccess := succeeded[len(succeeded)-1]
	var out backoffRecord
	for i := len(failed) - 1; i >= 0 && failed[i].After(lastSuccess); i-- {
		if out.failuresAfterLastSuccess == 0 {
			out.lastFailureTime = failed[i]
		}
		out.failuresAfterLastSuccess++
	}
	return out
}

// remaining is how long pod creation must still wait at now: base doubled
// per failure after the first, capped at max, counted from the last failure.
func (r backoffRecord) remaining(now time.Time, base, max time.Duration) time.Duration {
	if r.failuresAfterLastSuccess == 0 {
		return 0
	}
	delay := base
	for i := int32(1); i < r.failuresAfterLastSuccess; i++ {
		delay *= 2
		if delay >= max {
			delay = max
			break
		}
	}
	if delay > max {
		delay = max
	}
	elapsed := now.Sub(r.lastFailureTime)
	if delay < elapsed {
		return 0
	}
	return delay - elapsed
}

// finishedTime is when a pod finished: the latest container finish time if
// every container terminated, else the Ready=False transition, else the
// deletion time minus the grace period, else the creation time.
//
// NOTE: as Kubernetes' getFinishedTime (backoff_utils.go).
func finishedTime(p *corev1.Pod) time.Time {
	if t, ok := containersFinishedAt(p.Status.ContainerStatuses); ok {
		return t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		var grace int64
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// containersFinishedAt is the latest finishedAt of statuses, ok only if
// every one of them is terminated with a finish time.
func containersFinishedAt(statuses []corev1.ContainerStatus) (time.Time, bool) {
	var latest time.Time
	for _, s := range statuses {
		t := s.State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			return time.Time{}, false
		}
		if t.FinishedAt.After(latest) {
			latest = t.FinishedAt.Time
		}
	}
	return latest, !latest.IsZero()
}

func finishedTimes(pods []*corev1.Pod) []time.Time {
	out := make([]time.Time, 0, len(pods))
	for _, p := range pods {
		out = append(out, finishedTime(p))
	}
	return out
}

func sortTimes(ts []time.Time) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
}
