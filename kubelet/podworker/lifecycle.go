package podworker

import (
	"context"
	"errors"
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
		if err := r.runHandler(hctx, id, h); err != nil {
			r.log.WithError(err).Warn("FailedPreStopHook")
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
// (its status does not matter), or a sleep.
func (r *containerRun) runHandler(ctx context.Context, id string, h *corev1.LifecycleHandler) error {
	switch {
	case h.Exec != nil:
		code, err := r.w.m.cfg.Runtime.Exec(ctx, id, runtime.ExecConfig{Args: h.Exec.Command})
		if err != nil {
			return err
		}
		if code != 0 {
			return errors.New("exec hook exited with a non-zero code")
		}
		return nil
	case h.HTTPGet != nil:
		_, err := r.httpProbe(ctx, h.HTTPGet)
		if _, answered := err.(probeFailure); answered {
			return nil // any status will do for a hook
		}
		return err
	case h.Sleep != nil:
		t := time.NewTimer(time.Duration(h.Sleep.Seconds) * time.Second)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return nil
	}
	return errors.New("unsupported lifecycle handler (tcpSocket is deprecated)")
}
