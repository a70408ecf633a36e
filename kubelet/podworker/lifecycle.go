package podworker

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/runtime"
)

// runPreStop runs the container's preStop hook, if any, within grace, and
// returns what is left of grace for the stop signal (at least minimum).
//
// NOTE: as documented for Kubernetes, the grace period counts from before
// the hook: a hook that takes the whole period leaves the container
// minimum to stop (2s when the kubelet restarts a container, none when it
// terminates the pod with a grace period of its own).
func (r *containerRun) runPreStop(ctx context.Context, id string, grace, minimum time.Duration) time.Duration {
	start := time.Now()
	if h := r.preStop(); h != nil && grace > 0 {
		hctx, cancel := context.WithTimeout(ctx, grace)
		if msg, err := r.runHandler(hctx, id, h); err != nil {
			r.log.WithError(err).WithField("hook", msg).Warn("FailedPreStopHook")
			// As the kubelet: the event leaves the output out (secrets).
			r.event(corev1.EventTypeWarning, "FailedPreStopHook", "PreStopHook failed")
		}
		cancel()
	}
	return max(grace-time.Since(start), minimum)
}

func (r *containerRun) preStop() *corev1.LifecycleHandler {
	if r.spec.Lifecycle == nil {
		return nil
	}
	return r.spec.Lifecycle.PreStop
}

// runHandler runs a lifecycle hook: exec in the container, an HTTP GET
// (its status does not matter), or a sleep. On failure, msg says what
// went wrong as the kubelet's handler runner words it, with the output of
// an exec hook.
func (r *containerRun) runHandler(ctx context.Context, id string, h *corev1.LifecycleHandler) (msg string, err error) {
	switch {
	case h.Exec != nil:
		var stdout, stderr limitedBuffer
		stdout.max, stderr.max = maxProbeBody, maxProbeBody
		code, err := r.w.m.cfg.Runtime.Exec(ctx, id, runtime.ExecConfig{Args: h.Exec.Command, Stdout: &stdout, Stderr: &stderr})
		if err == nil && code != 0 {
			err = fmt.Errorf("command '%s' exited with %d: %s", strings.Join(h.Exec.Command, " "), code, stderr.String())
		}
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, r.spec.Name, podDescription(r.pod), err, stdout.String()+stderr.String()), err
		}
		return "", nil
	case h.HTTPGet != nil:
		_, err := r.httpProbe(ctx, h.HTTPGet, hookUserAgent)
		if _, answered := err.(probeFailure); answered || err == nil {
			return "", nil // any status will do for a hook
		}
		return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
			h.HTTPGet.Path, r.spec.Name, podDescription(r.pod), err), err
	case h.Sleep != nil:
		t := time.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return "", nil
	case h.TCPSocket != nil:
		return "", nil // deprecated: accepted and not run, as 1.34 does
	}
	err = fmt.Errorf("invalid handler: %v", h)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

func (r *containerRun) postStart() *corev1.LifecycleHandler {
	if r.spec.Lifecycle == nil {
		return nil
	}
	return r.spec.Lifecycle.PostStart
}

// runPostStart runs the postStart hook h in instance id, which has just
// started; failed is true (with the kubelet's message) when the hook
// failed. A container stopped meanwhile (or the daemon stopping) cuts the
// hook short without failing it: the caller then stops the container.
func (r *containerRun) runPostStart(ctx context.Context, id string, h *corev1.LifecycleHandler) (msg string, failed bool) {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		msg string
		err error
	}
	done := make(chan result, 1)
	go func() {
		msg, err := r.runHandler(hctx, id, h)
		done <- result{msg, err}
	}()
	select {
	case res := <-done:
		return res.msg, res.err != nil
	case <-r.halt:
	case <-r.podStop():
	case <-ctx.Done():
	}
	cancel()
	<-done
	return "", false
}

// failPostStart kills instance id after its postStart hook failed, as the
// kubelet does: a Warning event that leaves the hook's output out (it may
// hold secrets), preStop and the pod's grace, a Killing event. It returns
// the instance's exit for follow to record; the container then restarts,
// or not, by the pod's restart policy.
func (r *containerRun) failPostStart(ctx context.Context, id string, exit <-chan runtime.ExitStatus, msg string) (<-chan runtime.ExitStatus, bool) {
	r.log.WithField("hook", msg).Warn("FailedPostStartHook")
	r.event(corev1.EventTypeWarning, reasonFailedPostStartHook, "PostStartHook failed")
	grace := r.runPreStop(ctx, id, deletionGrace(&corev1.Pod{Spec: r.pod.Spec}), minGrace)
	r.event(corev1.EventTypeNormal, "Killing", "%s", reasonFailedPostStartHook)
	st, ok := r.stopAndWait(ctx, id, grace, exit)
	if !ok {
		return nil, false
	}
	r.postStartFailure = msg
	ch := make(chan runtime.ExitStatus, 1)
	ch <- st
	return ch, true
}
