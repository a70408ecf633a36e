package podworker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/skiff-sh/skiff/kube"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/failpoint"
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

	attempt      int                              // the instance being worked on
	instanceID   string                           // its containerd ID
	instance     *runtime.Container               // containerd's record of it, as recovery found it
	recorded     *corev1.ContainerStateTerminated // the store's record of its exit
	storeStarted bool                             // the store shows it started
	started      bool                             // the stored status says Started (adopted instance)
	startedAt    time.Time                        // when the running instance started
	backoff      restartBackoff                   // CrashLoopBackOff
	pulls        int                              // failed creations in a row, for their back-off
	imageRef     string                           // the image as containerd names it, once known
	imageID      string

	haltOnce    sync.Once
	halt        chan struct{} // closed to stop this container for good
	haltGrace   time.Duration
	kill        chan probeKill         // a failed liveness/startup probe
	newSpec     chan *corev1.Container // a changed definition (image): see update.go
	specChanged bool                   // the running instance was stopped for a new definition

	postStartFailure string // the kubelet's message for the last instance's failed postStart hook

	metaChanged <-chan struct{} // closed when the labels or annotations the last config read change (podmeta.go)

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
		kill:      make(chan probeKill, 1),
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
// created just before a crash); older leftovers, whose exits were recorded
// before a newer attempt began, are removed.
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
		r.attempt, r.instanceID, r.instance = attemptOf(newest), newest.ID, &newest
		r.startedAt = newest.StartedAt
		r.recorded = recordedExit(cs, newest.ID)
		r.storeStarted = storeStarted(cs, newest.ID)
		return
	}
	switch {
	case cs == nil || (cs.ContainerID == "" && cs.LastTerminationState.Terminated == nil):
		r.attempt = 0 // never ran
	case cs.State.Running != nil || cs.State.Terminated != nil:
		// It ran (its exit may be recorded); containerd no longer has it.
		r.attempt = int(cs.RestartCount)
		r.instanceID = instanceIDOf(cs.ContainerID)
		r.recorded = recordedExit(cs, r.instanceID)
		r.storeStarted = storeStarted(cs, r.instanceID)
	default: // waiting to restart
		r.attempt = int(cs.RestartCount) + 1
	}
}

// facts are what the store and the recovered record say of the current
// instance, before anything was done to it.
func (r *containerRun) facts() instanceFacts {
	f := instanceFacts{recorded: r.recorded != nil, storeStarted: r.storeStarted}
	if r.instance != nil {
		f.found, f.state, f.exit, f.taskCreated = true, r.instance.State, r.instance.Exit, r.instance.TaskCreated
	}
	return f
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
		hookFailure := r.postStartFailure
		r.postStartFailure = ""
		if r.stopping() || !(changed || kube.ContainerRestarts(&r.pod.Spec, r.spec.Name, code)) {
			return code == 0, true
		}
		if hookFailure != "" {
			// As the kubelet's reason cache shows it until the restart (or
			// the back-off in its place).
			if err := r.setWaiting(reasonPostStartHookError, hookFailure); err != nil {
				r.w.logError("recording postStart failure", err)
				return false, false
			}
		}
		if !changed && !r.backOff(ctx, exitedAt) {
			return false, ctx.Err() == nil
		}
		r.attempt++
		r.instanceID, r.instance, r.recorded, r.storeStarted, r.started = "", nil, nil, false, false
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
	return r.recorded != nil && r.recorded.ExitCode == 0
}

// runInstance runs (or takes over) instance r.attempt until it exits, and
// records the exit. ok is false when the daemon is stopping or the pod is
// gone: then nothing more must happen.
//
// What it does with the instance follows from durable facts (nextStep);
// when an operation fails for a transient reason (containerd restarting),
// the pod keeps its state, the reason goes to a Warning event, and after a
// back-off the instance's state is read again and decided afresh.
func (r *containerRun) runInstance(ctx context.Context) (exitCode int32, exitedAt time.Time, ok bool) {
	if r.instanceID == "" {
		r.instanceID = InstanceID(string(r.pod.UID), r.spec.Name, r.attempt)
	}
	id := r.instanceID
	facts := r.facts()
	for failures := 0; ; failures++ {
		var err error
		switch nextStep(facts) {
		case stepDone:
			r.releaseInstance(id)
			r.completeLogMessage(id)
			return r.recorded.ExitCode, r.recorded.FinishedAt.Time, true
		case stepLost:
			code, ok := r.recordLost(id)
			return code, r.w.m.now(), ok
		case stepRecord:
			ch := make(chan runtime.ExitStatus, 1)
			ch <- *facts.exit
			return r.follow(ctx, id, ch)
		case stepRead: // only an adopted instance: resume took its slot
			err = fmt.Errorf("instance %s: %w", id, runtime.ErrTaskUnknown)
		case stepAdopt:
			r.w.m.slots.take(id) // it runs: its shim holds a slot until it is removed
			var exit <-chan runtime.ExitStatus
			if exit, err = r.w.m.cfg.Runtime.Wait(ctx, id); err == nil {
				if !r.adopt(facts) {
					return 0, time.Time{}, false
				}
				return r.follow(ctx, id, exit)
			}
		case stepStart:
			r.w.m.slots.take(id) // the start cut short may have reached its shim
			var exit <-chan runtime.ExitStatus
			var code int32
			if exit, code, ok, err = r.launch(ctx, id); err == nil {
				if !ok || exit == nil {
					return code, r.w.m.now(), ok
				}
				return r.follow(ctx, id, exit)
			}
		case stepCreate:
			if facts.found {
				// It never started: make it again, with today's config.
				r.log.WithField("id", id).Info("removing an instance that never started, to create it again")
				if err = r.w.m.cfg.Runtime.Remove(ctx, id); err != nil {
					break
				}
			}
			var exit <-chan runtime.ExitStatus
			var code int32
			exit, code, ok, err = r.start(ctx, id)
			if err == nil {
				if !ok || exit == nil {
					return code, r.w.m.now(), ok // not started: stopping, or a start error already recorded
				}
				return r.follow(ctx, id, exit)
			}
		}
		if facts, ok = r.retry(ctx, id, err, failures); !ok {
			return 0, time.Time{}, false
		}
	}
}

// retry waits after a failed operation on instance id and reads its facts
// again, until it can read them; false when the daemon stops first.
func (r *containerRun) retry(ctx context.Context, id string, cause error, failures int) (instanceFacts, bool) {
	for {
		if ctx.Err() != nil {
			return instanceFacts{}, false
		}
		if runtime.IsTransient(cause) {
			r.log.WithError(cause).Warn("container runtime unavailable; retrying")
			r.event(corev1.EventTypeWarning, reasonFailedSync, "Error: %v; retrying", cause)
		} else {
			r.log.WithError(cause).Info("instance changed under an operation; reading it again")
		}
		if !r.pause(ctx, r.w.m.retryDelay(failures)) {
			return instanceFacts{}, false
		}
		f := instanceFacts{recorded: r.recorded != nil, storeStarted: r.storeStarted}
		c, err := r.w.m.cfg.Runtime.Inspect(ctx, id)
		switch {
		case errors.Is(err, runtime.ErrNotFound):
			return f, true
		case err == nil:
			f.found, f.state, f.exit, f.taskCreated = true, c.State, c.Exit, c.TaskCreated
			r.startedAt = c.StartedAt
			return f, true
		}
		cause = err
		failures++
	}
}

// pause waits d; false when the daemon stops first. Unlike sleep, a pod
// being stopped does not cut it short: the instance must still be settled.
func (r *containerRun) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// adopt takes over a running instance that an earlier run of skiffd (or an
// interrupted start) left: its status says running, as it may not yet.
func (r *containerRun) adopt(f instanceFacts) bool {
	if f.storeStarted {
		if r.started {
			r.markStarted()
		}
		if r.spec.ReadinessProbe != nil {
			// As the kubelet after a restart: not ready until its readiness
			// probe passes again (the probe starts from failure, and only a
			// change of verdict is written).
			r.setProbed(r.instanceID, func(cs *corev1.ContainerStatus) { cs.Ready = false })
		}
		return true
	}
	if r.startedAt.IsZero() {
		r.startedAt = r.w.m.now()
	}
	if err := r.recordRunning(r.instanceID, r.startedAt); err != nil {
		r.w.logError("recording adopted container", err)
		return false
	}
	return true
}

// follow watches a started instance until it exits, records the exit and
// removes the instance.
func (r *containerRun) follow(ctx context.Context, id string, exit <-chan runtime.ExitStatus) (exitCode int32, exitedAt time.Time, ok bool) {
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
	var opts []exitOption
	if r.postStartFailure != "" {
		// Never recorded running: its start comes from the runtime.
		opts = append(opts, withStartedAt(r.startedAt))
	}
	err := r.recordExit(id, status, opts...)
	if errors.Is(err, errPodGone) {
		r.w.removeInstance(id) // nothing left to record it in
		return 0, time.Time{}, false
	}
	if err != nil {
		// Keep the instance: its exit is not recorded yet, recovery will.
		r.w.logError("recording container exit", err)
		return 0, time.Time{}, false
	}
	failpoint.Hit(failpoint.AfterExitRecorded)
	r.releaseInstance(id)
	r.completeLogMessage(id)
	return status.Code, status.ExitedAt, true
}

// releaseInstance removes instance id, whose exit is recorded, and returns
// once its log is complete. Deleting its task ends its log driver; what
// comes after (the container, its snapshot, its lease) is removed while the
// pod goes on: a restart's next instance, or the pod's final status, does
// not wait for it. A removal cut short is finished by the next removal of
// the pod's leftovers (removeLeftovers: the sweep, or recovery).
func (r *containerRun) releaseInstance(id string) {
	if id != "" {
		m := r.w.m
		m.wg.Add(1) // under the worker's own count: Run has not returned
		go func() {
			defer m.wg.Done()
			m.removeInstance(id)
		}()
	}
	r.reportDroppedLogs(id)
}

// wait waits for the instance to exit, stopping it first if the container
// is stopped or a probe asks for it to be killed.
func (r *containerRun) wait(ctx context.Context, id string, exit <-chan runtime.ExitStatus) (runtime.ExitStatus, bool) {
	var grace, minimum time.Duration
	why := fmt.Sprintf("Stopping container %s", r.spec.Name)
	select {
	case st := <-exit:
		return st, true
	case <-ctx.Done():
		return runtime.ExitStatus{}, false
	case k := <-r.kill:
		grace, minimum, why = k.grace, minGrace, k.message
	case <-r.halt:
		grace = r.haltGrace
	case c := <-r.newSpec:
		grace = r.restartForSpec(c)
	case <-r.podStop():
		grace = r.w.stopGrace()
	}
	grace = r.runPreStop(ctx, id, grace, minimum)
	r.event(corev1.EventTypeNormal, "Killing", "%s", why)
	r.log.WithField("grace", grace).Info("stopping container")
	return r.stopAndWait(ctx, id, grace, exit)
}

// stopAndWait stops the instance and waits for its exit. A stop that fails
// for a transient reason (containerd restarting) is tried again until it
// works: the exit then comes from the task, never made up. Only when the
// stop failed otherwise and no exit came within a minute is the instance
// taken as killed (137).
func (r *containerRun) stopAndWait(ctx context.Context, id string, grace time.Duration, exit <-chan runtime.ExitStatus) (runtime.ExitStatus, bool) {
	for failures := 0; ; failures++ {
		// NOTE: the daemon's end cuts the stop short: skiffd must not wait
		// out a container's grace (hours, for some) to exit; the container
		// runs on, and recovery stops it again with what is left of it.
		stopCtx, cancel := context.WithTimeout(ctx, grace+time.Minute)
		err := r.w.m.cfg.Runtime.Stop(stopCtx, id, grace)
		cancel()
		if ctx.Err() != nil {
			return runtime.ExitStatus{}, false
		}
		if err == nil {
			select {
			case st := <-exit:
				return st, true
			case <-ctx.Done():
				return runtime.ExitStatus{}, false // recovery records the exit
			}
		}
		if !runtime.IsTransient(err) {
			r.log.WithError(err).Error("stopping container")
			break
		}
		r.log.WithError(err).Warn("stopping container; retrying")
		r.event(corev1.EventTypeWarning, reasonFailedSync, "Error: %v; retrying", err)
		select {
		case st := <-exit:
			return st, true
		case <-ctx.Done():
			return runtime.ExitStatus{}, false // the daemon stops: recovery stops it again
		case <-time.After(r.w.m.retryDelay(failures)):
		}
	}
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	select {
	case st := <-exit:
		return st, true
	case <-t.C:
		return runtime.ExitStatus{Code: 137, ExitedAt: r.w.m.now()}, true
	}
}
