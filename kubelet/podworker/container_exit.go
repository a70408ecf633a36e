package podworker

import (
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/skiff-sh/skiff/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/failpoint"
	"github.com/skiff-sh/skiff/runtime"
)

type exitOption func(*corev1.ContainerStateTerminated)

func withReason(reason, message string) exitOption {
	return func(t *corev1.ContainerStateTerminated) { t.Reason, t.Message = reason, message }
}

func withStartedAt(t time.Time) exitOption {
	return func(term *corev1.ContainerStateTerminated) { term.StartedAt = metav1.NewTime(t) }
}

// recordExit writes the instance's terminated state. A regular init
// container that exited 0 is Ready, as the kubelet reports it.
func (r *containerRun) recordExit(id string, st runtime.ExitStatus, opts ...exitOption) error {
	if st.ExitedAt.IsZero() {
		st.ExitedAt = r.w.m.now()
	}
	term := &corev1.ContainerStateTerminated{
		ExitCode:    st.Code,
		Signal:      int32(st.Signal),
		Reason:      terminatedReason(st.Code, st.OOMKilled),
		FinishedAt:  metav1.NewTime(st.ExitedAt),
		ContainerID: kube.ContainerID(id),
	}
	term.Message = r.terminationMessage(st.Code)
	for _, o := range opts {
		o(term)
	}
	r.log.WithFields(logrus.Fields{"exitCode": st.Code, "attempt": r.attempt, "reason": term.Reason}).Info("container exited")
	err := r.w.updateContainer(r.spec.Name, r.kind != kindRegular, func(cs *corev1.ContainerStatus) {
		if cs.State.Running != nil {
			term.StartedAt = cs.State.Running.StartedAt
		}
		if cs.State.Terminated != nil && cs.ContainerID != term.ContainerID {
			cs.LastTerminationState = corev1.ContainerState{Terminated: cs.State.Terminated}
		}
		cs.State = corev1.ContainerState{Terminated: term}
		cs.Ready = r.kind == kindInit && st.Code == 0
		cs.Started = ptr(false)
		cs.RestartCount = int32(r.attempt)
		cs.ContainerID = term.ContainerID
		failpoint.Hit(failpoint.InStatusWrite)
	})
	if err == nil {
		r.recorded = term
	}
	return err
}

// recordLost records an instance that containerd no longer knows, as the
// kubelet does for a container it cannot find.
func (r *containerRun) recordLost(id string) (int32, bool) {
	const code = 137
	err := r.w.updateContainer(r.spec.Name, r.kind != kindRegular, func(cs *corev1.ContainerStatus) {
		term := &corev1.ContainerStateTerminated{
			ExitCode:   code,
			Reason:     reasonStatusUnknown,
			Message:    messageLost,
			FinishedAt: metav1.NewTime(r.w.m.now()),
		}
		if cs.State.Running != nil {
			term.StartedAt = cs.State.Running.StartedAt
		}
		term.ContainerID = cs.ContainerID
		cs.State = corev1.ContainerState{Terminated: term}
		cs.Ready, cs.Started = false, ptr(false)
	})
	if errors.Is(err, errPodGone) {
		r.w.removeInstance(id) // nothing left to record it in
		return 0, false
	}
	if err != nil {
		r.w.logError("recording lost container", err)
		return 0, false
	}
	if id != "" {
		r.w.removeInstance(id)
	}
	return code, true
}
