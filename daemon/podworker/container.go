package podworker

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/runtime"
)

// containerKind tells the kinds of container of a pod apart.
type containerKind int

const (
	kindRegular   containerKind = iota
	kindInit                    // runs to completion before the regular containers
	kindSidecar                 // restartable init container: runs beside them
	kindEphemeral               // added by kubectl debug: runs once (ephemeral.go)
)

// containerRun drives one container of a pod through its instances:
// image, create, start, wait for the exit, record it, restart or stop.
type containerRun struct {
	w    *worker
	pod  *corev1.Pod
	spec *corev1.Container
	kind containerKind
	log  *logrus.Entry

	attempt   int                // the instance being worked on
	instance  *runtime.Container // an adopted instance for attempt, if any
	recorded  bool               // the instance's exit is already in the store
	started   bool               // the stored status says Started (adopted instance)
	startedAt time.Time          // when the running instance started
	backoff   restartBackoff     // CrashLoopBackOff
	pulls     int                // failed creations in a row, for their back-off
	imageRef  string             // the image as containerd names it, once known
	imageID   string

	haltOnce    sync.Once
	halt        chan struct{} // closed to stop this container for good
	haltGrace   time.Duration
	kill        chan time.Duration     // a failed liveness/startup probe: kill with this grace
	newSpec     chan *corev1.Container // a changed definition (image): see update.go
	specChanged bool                   // the running instance was stopped for a new definition

	startedOnce sync.Once
	startedCh   chan struct{} // closed once the container has started (sidecars)
	done        chan struct{} // closed when a sidecar's run ends
	attemptOnce sync.Once
	attempted   chan struct{} // closed once its first start was tried (order.go)
}

func newContainerRun(w *worker, pod *corev1.Pod, c *corev1.Container, kind containerKind) *containerRun {
	r := &containerRun{
		w: w, pod: pod, spec: c, kind: kind,
		log:       w.log.WithField("container", c.Name),
		backoff:   restartBackoff{base: w.m.cfg.RestartBackoffBase, max: w.m.cfg.RestartBackoffMax},
		halt:      make(chan struct{}),
		kill:      make(chan time.Duration, 1),
		newSpec:   make(chan *corev1.Container, 1),
		startedCh: make(chan struct{}),
		attempted: make(chan struct{}),
	}
	statuses := pod.Status.ContainerStatuses
	switch kind {
	case kindInit, kindSidecar:
		statuses = pod.Status.InitContainerStatuses
	case kindEphemeral:
		statuses = pod.Status.EphemeralContainerStatuses
	}
	r.resume(kube.ContainerStatus(statuses, c.Name), w.takeAdopted(c.Name))
	w.track(r)
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
	if cs != nil {
		r.imageID = cs.ImageID
		r.started = cs.Started != nil && *cs.Started && cs.State.Running != nil
	}
	if len(found) > 0 {
		newest := found[len(found)-1]
		r.w.m.slots.take(newest.ID) // its shim still runs, until it is removed
		r.attempt = attemptOf(newest)
		r.startedAt = newest.StartedAt
		r.instance = &newest
		r.recorded = cs != nil && cs.State.Terminated != nil && cs.ContainerID == kube.ContainerID(newest.ID)
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

// stop stops the container for good, giving it grace after its stop signal.
func (r *containerRun) stop(grace time.Duration) {
	r.haltOnce.Do(func() {
		r.haltGrace = grace
		close(r.halt)
	})
}

// stopping reports whether the container must not run again: it was
// stopped, or (for all but sidecars, which the worker stops last) the pod is
// being terminated.
func (r *containerRun) stopping() bool {
	select {
	case <-r.halt:
		return true
	default:
	}
	return r.kind != kindSidecar && r.w.stopping()
}

// podStop is the pod's termination signal as it concerns this container:
// none for sidecars, which the worker stops itself after the others.
func (r *containerRun) podStop() <-chan struct{} {
	if r.kind == kindSidecar {
		return nil
	}
	return r.w.stop
}

// markStarted notes that the container started (its startup probe, if any,
// passed): the worker waits for this before the next init container.
func (r *containerRun) markStarted() {
	r.startedOnce.Do(func() { close(r.startedCh) })
}

// run runs instances until one ends for good. It reports whether the last
// instance exited 0 (what an init container must do); ok is false when the
// daemon is stopping or the pod is gone, and nothing more must happen.
func (r *containerRun) run(ctx context.Context) (succeeded, ok bool) {
	for {
		code, exitedAt, ok := r.runInstance(ctx)
		if !ok {
			return false, false
		}
		changed := r.takeSpecChange()
		if r.stopping() || !(changed || kube.ContainerRestarts(&r.pod.Spec, r.spec.Name, code)) {
			return code == 0, true
		}
		if !changed && !r.backOff(ctx, exitedAt) {
			return false, ctx.Err() == nil
		}
		r.attempt++
		r.instance, r.recorded, r.started = nil, false, false
	}
}

// discard gives up the container's recovered instance: an init container
// that has nothing left to do.
func (r *containerRun) discard() {
	if r.instance != nil {
		r.w.removeInstance(r.instance.ID)
	}
}

// completed reports whether an init container already succeeded (in an
// earlier run of the daemon).
func (r *containerRun) completed() bool {
	return r.instance != nil && r.recorded && r.instance.Exit != nil && r.instance.Exit.Code == 0
}

// runInstance runs (or takes over) instance r.attempt until it exits, and
// records the exit. ok is false when the daemon is stopping or the pod is
// gone: then nothing more must happen.
func (r *containerRun) runInstance(ctx context.Context) (exitCode int32, exitedAt time.Time, ok bool) {
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
			return code, r.w.m.now(), ok // not started: stopping, or a start error already recorded
		}
	case r.instance.State == runtime.StateRunning:
		id = r.instance.ID
		ch, err := r.w.m.cfg.Runtime.Wait(ctx, id)
		if err != nil {
			r.log.WithError(err).Warn("re-attaching to container failed; treating it as lost")
			code, ok := r.recordLost(id)
			return code, r.w.m.now(), ok
		}
		exit = ch
		if r.started {
			r.markStarted()
		}
	case r.instance.Exit == nil:
		code, ok := r.recordLost(r.instance.ID)
		return code, r.w.m.now(), ok
	default:
		if r.recorded {
			r.w.removeInstance(r.instance.ID)
			r.reportDroppedLogs(r.instance.ID)
			return r.instance.Exit.Code, r.instance.Exit.ExitedAt, true
		}
		id = r.instance.ID
		ch := make(chan runtime.ExitStatus, 1)
		ch <- *r.instance.Exit
		exit = ch
	}
	select {
	case <-r.kill: // a verdict on an earlier instance
	default:
	}
	probeCtx, stopProbes := context.WithCancel(ctx)
	r.startProbes(probeCtx, id)
	status, ok := r.wait(ctx, id, exit)
	stopProbes()
	if !ok {
		return 0, time.Time{}, false
	}
	err := r.recordExit(id, status)
	if err != nil {
		// Keep the instance: its exit is not recorded yet, recovery will.
		r.w.logError("recording container exit", err)
		return 0, time.Time{}, false
	}
	r.w.removeInstance(id)
	r.reportDroppedLogs(id)
	return status.Code, status.ExitedAt, true
}

// wait waits for the instance to exit, stopping it first if the container
// is stopped or a probe asks for it to be killed.
func (r *containerRun) wait(ctx context.Context, id string, exit <-chan runtime.ExitStatus) (runtime.ExitStatus, bool) {
	var grace, minimum time.Duration
	select {
	case st := <-exit:
		return st, true
	case <-ctx.Done():
		return runtime.ExitStatus{}, false
	case grace = <-r.kill:
		minimum = minGrace
	case <-r.halt:
		grace = r.haltGrace
	case c := <-r.newSpec:
		grace = r.restartForSpec(c)
	case <-r.podStop():
		grace = r.w.stopGrace()
	}
	grace = r.runPreStop(ctx, id, grace, minimum)
	r.event(corev1.EventTypeNormal, "Killing", "Stopping container %s", r.spec.Name)
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
