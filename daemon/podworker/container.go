package podworker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/runtime"
)

// containerRun drives one container of a pod through its instances:
// image, create, start, wait for the exit, record it, restart or stop.
type containerRun struct {
	w    *worker
	pod  *corev1.Pod
	spec *corev1.Container
	log  *logrus.Entry

	attempt  int                // the instance being worked on
	instance *runtime.Container // an adopted instance for attempt, if any
	recorded bool               // the instance's exit is already in the store
	restarts int                // restarts done by this run, for the backoff
	pulls    int                // failed image pulls in a row, for the backoff
}

func newContainerRun(w *worker, pod *corev1.Pod, c *corev1.Container) *containerRun {
	r := &containerRun{w: w, pod: pod, spec: c, log: w.log.WithField("container", c.Name)}
	r.resume(findStatus(pod.Status.ContainerStatuses, c.Name), w.adopted[c.Name])
	delete(w.adopted, c.Name)
	return r
}

// resume picks up where the store and containerd say the container is: the
// newest instance found in containerd wins over the store (it may have been
// started just before a crash); older leftovers are removed.
func (r *containerRun) resume(cs *corev1.ContainerStatus, found []runtime.Container) {
	sort.Slice(found, func(i, j int) bool { return attemptOf(found[i]) < attemptOf(found[j]) })
	for i := 0; i+1 < len(found); i++ {
		r.w.removeInstance(found[i].ID)
	}
	if len(found) > 0 {
		newest := found[len(found)-1]
		r.attempt = attemptOf(newest)
		r.instance = &newest
		r.recorded = cs != nil && cs.State.Terminated != nil && cs.ContainerID == containerIDString(newest.ID)
		return
	}
	switch {
	case cs == nil || (cs.ContainerID == "" && cs.LastTerminationState.Terminated == nil):
		r.attempt = 0 // never ran
	case cs.State.Running != nil:
		// It ran, but containerd no longer knows it.
		r.attempt = int(cs.RestartCount)
		r.instance = &runtime.Container{ID: "", State: runtime.StateExited, Exit: nil}
	case cs.State.Terminated != nil:
		r.attempt = int(cs.RestartCount)
		r.recorded = true
		r.instance = &runtime.Container{State: runtime.StateExited, Exit: &runtime.ExitStatus{Code: cs.State.Terminated.ExitCode}}
	default: // waiting to restart
		r.attempt = int(cs.RestartCount) + 1
	}
}

func attemptOf(c runtime.Container) int {
	n, _ := strconv.Atoi(c.Labels[runtime.LabelAttempt])
	return n
}

func (r *containerRun) run(ctx context.Context) {
	for {
		code, ok := r.runInstance(ctx)
		if !ok || r.w.stopping() || !shouldRestart(r.pod.Spec.RestartPolicy, code) {
			return
		}
		if !r.backOff(ctx) {
			return
		}
		r.attempt++
		r.instance, r.recorded = nil, false
	}
}

// runInstance runs (or takes over) instance r.attempt until it exits, and
// records the exit. ok is false when the daemon is stopping or the pod is
// gone: then nothing more must happen.
func (r *containerRun) runInstance(ctx context.Context) (exitCode int32, ok bool) {
	var exit <-chan runtime.ExitStatus
	id := instanceID(string(r.pod.UID), r.spec.Name, r.attempt)
	switch {
	case r.instance == nil || r.instance.State == runtime.StateCreated:
		if r.instance != nil {
			r.w.removeInstance(r.instance.ID) // created but never started: start afresh
		}
		var code int32
		exit, code, ok = r.start(ctx, id)
		if !ok || exit == nil {
			return code, ok // not started: stopping, or a start error already recorded
		}
	case r.instance.State == runtime.StateRunning:
		id = r.instance.ID
		ch, err := r.w.m.cfg.Runtime.Wait(ctx, id)
		if err != nil {
			r.log.WithError(err).Warn("re-attaching to container failed; treating it as lost")
			return r.recordLost(id)
		}
		exit = ch
	case r.instance.Exit == nil:
		return r.recordLost(r.instance.ID)
	default:
		if r.recorded {
			r.w.removeInstance(r.instance.ID)
			return r.instance.Exit.Code, true
		}
		id = r.instance.ID
		ch := make(chan runtime.ExitStatus, 1)
		ch <- *r.instance.Exit
		exit = ch
	}
	status, ok := r.wait(ctx, id, exit)
	if !ok {
		return 0, false
	}
	err := r.recordExit(id, status)
	if err != nil && !errors.Is(err, errPodGone) {
		// Keep the instance: its exit is not recorded yet, recovery will.
		r.w.logError("recording container exit", err)
		return 0, false
	}
	r.w.removeInstance(id)
	return status.Code, err == nil
}

// wait waits for the instance to exit, stopping it first if the pod is
// being terminated.
func (r *containerRun) wait(ctx context.Context, id string, exit <-chan runtime.ExitStatus) (runtime.ExitStatus, bool) {
	select {
	case st := <-exit:
		return st, true
	case <-ctx.Done():
		return runtime.ExitStatus{}, false
	case <-r.w.stop:
	}
	grace := r.w.stopGrace()
	r.log.WithField("grace", grace).Info("stopping container")
	stopCtx, cancel := context.WithTimeout(context.Background(), grace+time.Minute)
	defer cancel()
	if err := r.w.m.cfg.Runtime.Stop(stopCtx, id, grace); err != nil {
		r.log.WithError(err).Error("stopping container")
	}
	select {
	case st := <-exit:
		return st, true
	case <-stopCtx.Done():
		return runtime.ExitStatus{Code: 137, ExitedAt: r.w.m.now()}, true
	}
}

// start ensures the image, creates and starts instance id. exit is nil
// when nothing was started: the pod is being stopped first, or the start
// failed (recorded as the instance's exit, with code). ok is false when the
// run must end at once (daemon stopping, pod gone).
func (r *containerRun) start(ctx context.Context, id string) (exit <-chan runtime.ExitStatus, code int32, ok bool) {
	for {
		if r.w.stopping() {
			return nil, 0, true
		}
		err := r.createInstance(ctx, id)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, 0, false
		}
		if !r.waitRetry(ctx, err) {
			return nil, 0, ctx.Err() == nil
		}
	}
	startedAt, exit, err := r.w.m.cfg.Runtime.Start(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, false
		}
		// NOTE: the kubelet reports a failed start as a terminated instance
		// with reason StartError and exit code 128.
		r.log.WithError(err).Warn("starting container")
		rec := r.recordExit(id, runtime.ExitStatus{Code: 128, ExitedAt: r.w.m.now()}, withReason("StartError", err.Error()))
		r.w.removeInstance(id)
		return nil, 128, rec == nil
	}
	err = r.w.updateContainer(r.spec.Name, func(cs *corev1.ContainerStatus) {
		if cs.State.Terminated != nil {
			cs.LastTerminationState = corev1.ContainerState{Terminated: cs.State.Terminated}
		}
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}}
		cs.Ready, cs.Started = true, ptr(true)
		cs.RestartCount = int32(r.attempt)
		cs.ContainerID = containerIDString(id)
		cs.Image = r.spec.Image
	})
	if err != nil {
		r.w.logError("recording container start", err)
		return nil, 0, false
	}
	r.log.WithField("attempt", r.attempt).Info("container started")
	return exit, 0, true
}

// createInstance makes sure the image is there and creates the container.
func (r *containerRun) createInstance(ctx context.Context, id string) error {
	rt := r.w.m.cfg.Runtime
	if err := rt.EnsureImage(ctx, r.spec.Image, pullPolicy(r.spec)); err != nil {
		return &imageError{err}
	}
	r.pulls = 0
	cfg, err := containerConfig(r.pod, r.spec, r.attempt, r.w.m.node)
	if err != nil {
		return err
	}
	r.w.applySandbox(&cfg)
	if err := rt.Create(ctx, cfg); err != nil {
		return fmt.Errorf("creating container: %w", err)
	}
	return nil
}

type imageError struct{ err error }

func (e *imageError) Error() string { return e.err.Error() }
func (e *imageError) Unwrap() error { return e.err }

// waitRetry records why the container could not be created and waits
// before the next try; false when the pod is being stopped or the daemon is.
func (r *containerRun) waitRetry(ctx context.Context, err error) bool {
	reason, message := r.waitingReason(err)
	r.log.WithError(err).Warn(reason)
	if uerr := r.w.updateContainer(r.spec.Name, func(cs *corev1.ContainerStatus) {
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
		cs.Ready = false
	}); uerr != nil {
		r.w.logError("recording waiting reason", uerr)
		return false
	}
	delay := backoffDelay(r.w.m.cfg.RestartBackoffBase, r.w.m.cfg.RestartBackoffMax, r.pulls)
	r.pulls++
	var ie *imageError
	if errors.As(err, &ie) && !errors.Is(err, runtime.ErrImageNotPresent) {
		// The kubelet shows ImagePullBackOff while it waits to pull again.
		_ = r.w.updateContainer(r.spec.Name, func(cs *corev1.ContainerStatus) {
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  reasonImagePullBackOff,
				Message: fmt.Sprintf("Back-off pulling image %q: %s", r.spec.Image, err),
			}}
		})
	}
	return r.sleep(ctx, delay)
}

func (r *containerRun) waitingReason(err error) (reason, message string) {
	var ce *configError
	var ie *imageError
	switch {
	case errors.Is(err, runtime.ErrImageNotPresent):
		return reasonErrImageNeverPull, fmt.Sprintf("Container image %q is not present with pull policy of Never", r.spec.Image)
	case errors.As(err, &ie):
		return reasonErrImagePull, err.Error()
	case errors.As(err, &ce):
		return "CreateContainerConfigError", err.Error()
	default:
		return reasonCreateContainer, err.Error()
	}
}

// backOff waits before a restart, showing CrashLoopBackOff as the kubelet
// does; the first restart is immediate.
func (r *containerRun) backOff(ctx context.Context) bool {
	delay := time.Duration(0)
	if r.restarts > 0 {
		delay = backoffDelay(r.w.m.cfg.RestartBackoffBase, r.w.m.cfg.RestartBackoffMax, r.restarts-1)
	}
	r.restarts++
	if delay == 0 {
		return true
	}
	msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
		delay.Round(time.Millisecond), r.spec.Name, r.pod.Name, r.pod.Namespace, r.pod.UID)
	if err := r.w.updateContainer(r.spec.Name, func(cs *corev1.ContainerStatus) {
		if cs.State.Terminated != nil {
			cs.LastTerminationState = corev1.ContainerState{Terminated: cs.State.Terminated}
		}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff, Message: msg}}
	}); err != nil {
		r.w.logError("recording back-off", err)
		return false
	}
	return r.sleep(ctx, delay)
}

func (r *containerRun) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-r.w.stop:
		return false
	}
}

type exitOption func(*corev1.ContainerStateTerminated)

func withReason(reason, message string) exitOption {
	return func(t *corev1.ContainerStateTerminated) { t.Reason, t.Message = reason, message }
}

// recordExit writes the instance's terminated state.
func (r *containerRun) recordExit(id string, st runtime.ExitStatus, opts ...exitOption) error {
	if st.ExitedAt.IsZero() {
		st.ExitedAt = r.w.m.now()
	}
	term := &corev1.ContainerStateTerminated{
		ExitCode:    st.Code,
		Signal:      int32(st.Signal),
		Reason:      terminatedReason(st.Code, st.OOMKilled),
		FinishedAt:  metav1.NewTime(st.ExitedAt),
		ContainerID: containerIDString(id),
	}
	for _, o := range opts {
		o(term)
	}
	r.log.WithFields(logrus.Fields{"exitCode": st.Code, "attempt": r.attempt}).Info("container exited")
	return r.w.updateContainer(r.spec.Name, func(cs *corev1.ContainerStatus) {
		if cs.State.Running != nil {
			term.StartedAt = cs.State.Running.StartedAt
		}
		if cs.State.Terminated != nil && cs.ContainerID != term.ContainerID {
			cs.LastTerminationState = corev1.ContainerState{Terminated: cs.State.Terminated}
		}
		cs.State = corev1.ContainerState{Terminated: term}
		cs.Ready, cs.Started = false, ptr(false)
		cs.RestartCount = int32(r.attempt)
		cs.ContainerID = term.ContainerID
	})
}

// recordLost records an instance that containerd no longer knows, as the
// kubelet does for a container it cannot find.
func (r *containerRun) recordLost(id string) (int32, bool) {
	const code = 137
	err := r.w.updateContainer(r.spec.Name, func(cs *corev1.ContainerStatus) {
		term := &corev1.ContainerStateTerminated{
			ExitCode:   code,
			Reason:     reasonStatusUnknown,
			Message:    "The container could not be located when the pod was terminated",
			FinishedAt: metav1.NewTime(r.w.m.now()),
		}
		if cs.State.Running != nil {
			term.StartedAt = cs.State.Running.StartedAt
		}
		term.ContainerID = cs.ContainerID
		cs.State = corev1.ContainerState{Terminated: term}
		cs.Ready, cs.Started = false, ptr(false)
	})
	if err != nil {
		r.w.logError("recording lost container", err)
		return 0, false
	}
	if id != "" {
		r.w.removeInstance(id)
	}
	return code, true
}
