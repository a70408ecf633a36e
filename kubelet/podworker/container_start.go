package podworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/runtime"
)

// start ensures the image, creates and starts instance id. exit is nil
// when nothing was started: the container is being stopped, or the start
// failed (recorded as the instance's exit, with code). ok is false when the
// run must end at once (daemon stopping, pod gone). err is a transient
// failure, or a sign that the instance is not what the caller thought (it
// started meanwhile): the caller reads its state again and retries; the
// pod's status is left as it was.
//
// NOTE: this is the one place where an instance is about to be created and
// started; anything that must hold a container back (node-wide limits)
// belongs here, before createInstance.
func (r *containerRun) start(ctx context.Context, id string) (exit <-chan runtime.ExitStatus, code int32, ok bool, err error) {
	defer r.passTurn()
	for {
		if r.stopping() {
			return nil, 0, true, nil
		}
		err := r.createInstance(ctx, id)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, 0, false, nil
		}
		if runtime.IsTransient(err) {
			return nil, 0, true, err // e.g. a container of that ID appeared: read it again
		}
		if !r.waitRetry(ctx, err) {
			return nil, 0, ctx.Err() == nil, nil
		}
	}
	if !r.takeSlot(ctx, id) {
		if ctx.Err() != nil {
			return nil, 0, false, nil
		}
		r.w.removeInstance(id) // created, never started
		return nil, 0, true, nil
	}
	return r.launch(ctx, id)
}

// launch starts instance id's task (created by createInstance, or left
// created by a start cut short) and records it running; its results are
// start's.
func (r *containerRun) launch(ctx context.Context, id string) (exit <-chan runtime.ExitStatus, code int32, ok bool, err error) {
	startedAt, exit, err := r.w.m.cfg.Runtime.Start(ctx, id)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, false, nil
		}
		if !errors.Is(err, runtime.ErrStartFailed) {
			return nil, 0, true, err
		}
		return nil, 128, r.recordStartError(id, err), nil
	}
	r.startedAt = startedAt
	r.event(corev1.EventTypeNormal, "Started", "Started container %v", r.spec.Name)
	r.log.WithField("attempt", r.attempt).Info("container started")
	// The kubelet runs postStart before its next status: the container
	// shows Running (and may be Ready) only once the hook is done.
	if h := r.postStart(); h != nil {
		if msg, failed := r.runPostStart(ctx, id, h); failed {
			exit, ok := r.failPostStart(ctx, id, exit, msg)
			return exit, 0, ok, nil
		}
	}
	if err := r.recordRunning(id, startedAt); err != nil {
		r.w.logError("recording container start", err)
		return nil, 0, false, nil
	}
	return exit, 0, true, nil
}

// recordRunning writes that instance id runs since startedAt (Started and
// Ready unless a startup or readiness probe must pass first).
func (r *containerRun) recordRunning(id string, startedAt time.Time) error {
	started := r.spec.StartupProbe == nil
	err := r.w.updateContainer(r.spec.Name, r.kind != kindRegular, func(cs *corev1.ContainerStatus) {
		if cs.State.Terminated != nil {
			cs.LastTerminationState = corev1.ContainerState{Terminated: cs.State.Terminated}
		}
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}}
		cs.Started = ptr(started)
		cs.Ready = r.kind != kindInit && r.kind != kindEphemeral && started && r.spec.ReadinessProbe == nil
		cs.RestartCount = int32(r.attempt)
		cs.ContainerID = kube.ContainerID(id)
		if r.imageRef != "" {
			cs.Image = r.imageRef
		}
		if r.imageID != "" {
			cs.ImageID = r.imageID
		}
	})
	if err != nil {
		return err
	}
	r.storeStarted = true
	if started {
		r.markStarted()
	}
	return nil
}

// recordStartError records a failed start, as the kubelet with containerd
// shows it: the instance terminated with reason StartError and exit code
// 128 and, if it will be tried again, the container waiting in
// RunContainerError.
func (r *containerRun) recordStartError(id string, err error) bool {
	r.log.WithError(err).Warn("starting container")
	r.event(corev1.EventTypeWarning, "Failed", "Error: %v", err)
	rec := r.recordExit(id, runtime.ExitStatus{Code: 128, ExitedAt: r.w.m.now()}, withReason(reasonStartError, err.Error()))
	r.w.removeInstance(id)
	if rec != nil {
		r.w.logError("recording start error", rec)
		return false
	}
	if r.stopping() || !kube.ContainerRestarts(&r.pod.Spec, r.spec.Name, 128) {
		return true
	}
	rec = r.w.updateContainer(r.spec.Name, r.kind != kindRegular, func(cs *corev1.ContainerStatus) {
		if cs.State.Terminated != nil {
			cs.LastTerminationState = corev1.ContainerState{Terminated: cs.State.Terminated}
		}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonRunContainer, Message: err.Error()}}
	})
	if rec != nil {
		r.w.logError("recording start error", rec)
		return false
	}
	return true
}

// createInstance makes sure the image is there and creates the container.
func (r *containerRun) createInstance(ctx context.Context, id string) error {
	rt := r.w.m.cfg.Runtime
	info, err := r.ensureImage(ctx)
	if err != nil {
		return &imageError{err}
	}
	r.imageRef, r.imageID = info.Ref, info.ID
	pod, metaChanged := r.w.withLatestMeta(r.pod)
	r.metaChanged = metaChanged
	cfg, err := r.w.containerConfig(pod, r.spec, r.attempt, info)
	if err == nil {
		err = r.prepareLog(cfg)
	}
	if err != nil {
		return err
	}
	if r.kind == kindEphemeral {
		if cfg.PIDNSPath, err = r.targetPIDNamespace(ctx); err != nil {
			return err
		}
	}
	if err := rt.Create(ctx, cfg); err != nil {
		return fmt.Errorf("creating container: %w", err)
	}
	r.event(corev1.EventTypeNormal, "Created", "Created container: %v", r.spec.Name)
	r.pulls = 0
	return nil
}

type imageError struct{ err error }

func (e *imageError) Error() string { return e.err.Error() }
func (e *imageError) Unwrap() error { return e.err }

// waitRetry records why the container could not be created and waits
// before the next try; false when the container is stopped or the daemon is.
func (r *containerRun) waitRetry(ctx context.Context, err error) bool {
	r.passTurn()
	reason, message := r.waitingReason(err)
	r.log.WithError(err).Warn(reason)
	r.waitEvents(err, message)
	if uerr := r.setWaiting(reason, message); uerr != nil {
		r.w.logError("recording waiting reason", uerr)
		return false
	}
	if ce := (*configError)(nil); errors.As(err, &ce) {
		return r.waitConfigRetry(ctx)
	}
	delay := backoffDelay(r.w.m.cfg.RestartBackoffBase, r.w.m.cfg.RestartBackoffMax, r.pulls)
	r.pulls++
	var ie *imageError
	if errors.As(err, &ie) && !errors.Is(err, runtime.ErrImageNotPresent) {
		// The kubelet shows ImagePullBackOff while it waits to pull again.
		msg := fmt.Sprintf("Back-off pulling image %q: %s: %s", r.spec.Image, reasonErrImagePull, err)
		if uerr := r.setWaiting(reasonImagePullBackOff, msg); uerr != nil {
			r.w.logError("recording waiting reason", uerr)
			return false
		}
	}
	return r.sleep(ctx, delay)
}

func (r *containerRun) setWaiting(reason, message string) error {
	return r.w.updateContainer(r.spec.Name, r.kind != kindRegular, func(cs *corev1.ContainerStatus) {
		if cs.State.Terminated != nil {
			cs.LastTerminationState = corev1.ContainerState{Terminated: cs.State.Terminated}
		}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
		cs.Ready = false
	})
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
		return reasonCreateConfig, err.Error()
	default:
		return reasonCreateContainer, err.Error()
	}
}

// backOff waits before a restart, showing CrashLoopBackOff as the kubelet
// does while it waits.
func (r *containerRun) backOff(ctx context.Context, exitedAt time.Time) bool {
	delay := r.backoff.next(exitedAt)
	if delay == 0 {
		return true
	}
	msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
		delay, r.spec.Name, r.pod.Name, r.pod.Namespace, r.pod.UID)
	if err := r.setWaiting(reasonCrashLoopBackOff, msg); err != nil {
		r.w.logError("recording back-off", err)
		return false
	}
	r.event(corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", r.spec.Name, podDescription(r.pod))
	return r.sleep(ctx, delay-r.w.m.now().Sub(exitedAt))
}

// sleep waits d; false when the container is stopped or the daemon is.
func (r *containerRun) sleep(ctx context.Context, d time.Duration) bool {
	return r.sleepOrWake(ctx, d, nil)
}

// sleepOrWake is sleep, cut short when wake is closed.
func (r *containerRun) sleepOrWake(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	if d <= 0 {
		return !r.stopping() && ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-wake:
		return true
	case <-ctx.Done():
		return false
	case <-r.halt:
		return false
	case <-r.podStop():
		return false
	case c := <-r.newSpec:
		r.useSpec(c) // e.g. a fixed image: try it now
		return true
	}
}
