package podworker

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// messageDeadline is the kubelet's message for a pod past its activeDeadlineSeconds.
const messageDeadline = "Pod was active on the node longer than the specified deadline"

// deadlineLeft is how long the pod started at start may still run under
// activeDeadlineSeconds limit; ok is false without a limit.
func deadlineLeft(start time.Time, limit *int64, now time.Time) (left time.Duration, ok bool) {
	if limit == nil {
		return 0, false
	}
	return start.Add(time.Duration(*limit) * time.Second).Sub(now), true
}

// enforceDeadline fails the pod once it has been active on the node longer
// than spec.activeDeadlineSeconds, counted from status.startTime, as the
// kubelet's activeDeadlineHandler does. The limit follows updates of the
// pod (it is one of the few mutable fields).
func (w *worker) enforceDeadline(ctx context.Context, pod *corev1.Pod) {
	start := pod.Status.StartTime.Time
	limit := pod.Spec.ActiveDeadlineSeconds
	for {
		var fire <-chan time.Time
		var timer *time.Timer
		if left, ok := deadlineLeft(start, limit, w.m.now()); ok {
			timer = time.NewTimer(max(left, 0))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
		case <-w.stop:
		case p := <-w.updates:
			if timer != nil {
				timer.Stop()
			}
			limit = p.Spec.ActiveDeadlineSeconds
			continue
		case <-fire:
			w.exceedDeadline(pod)
		}
		if timer != nil {
			timer.Stop()
		}
		return
	}
}

// exceedDeadline terminates the pod for its deadline: the kubelet's
// DeadlineExceeded failure. The DisruptionTarget condition says at once
// that skiffd is ending the pod; the Failed phase follows once its
// containers have stopped.
func (w *worker) exceedDeadline(pod *corev1.Pod) {
	w.log.Info("pod exceeded its activeDeadlineSeconds; terminating it")
	// As the kubelet's active deadline handler: a Normal event on the pod.
	w.event(corev1.EventTypeNormal, reasonDeadlineExceeded, messageDeadline)
	w.mu.Lock()
	w.reason, w.message = reasonDeadlineExceeded, messageDeadline
	w.mu.Unlock()
	_, err := w.update(func(p *corev1.Pod) {
		setCondition(&p.Status, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: reasonTerminationKubelet, Message: messageDeadline,
		}, metav1.NewTime(w.m.now()))
	})
	if err != nil {
		w.logError("recording the deadline", err)
	}
	w.terminate(deletionGrace(&corev1.Pod{Spec: pod.Spec}))
}
