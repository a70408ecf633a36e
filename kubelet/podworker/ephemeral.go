package podworker

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
)

// Ephemeral containers (kubectl debug) are added to a running pod through
// its ephemeralcontainers subresource. As the kubelet does, the worker runs
// each one once, as soon as it appears in the spec and the pod's containers
// may run (its volumes are set up; init containers need not be done), in
// the pod's network and, with targetContainerName, in the target's PID
// namespace; its status goes to ephemeralContainerStatuses, its output to a
// log file like any container's; it is never restarted, and it is stopped
// with the pod.

// ephemeralRuns are the runs of a worker's ephemeral containers.
// The zero value is ready to use.
type ephemeralRuns struct {
	mu      sync.Mutex
	ctx     context.Context // the worker's run context, once they may start
	latest  *corev1.Pod     // the newest version of the pod seen
	runs    map[string]*containerRun
	stopped bool // the pod's containers are done: no more may start
	wg      sync.WaitGroup
}

// ephemeralChanged starts the ephemeral containers that pod adds, once the
// pod's containers may run (before that, startEphemeral starts them).
func (w *worker) ephemeralChanged(pod *corev1.Pod) {
	e := &w.ephemeral
	e.mu.Lock()
	defer e.mu.Unlock()
	e.latest = pod
	w.startNewEphemeral()
}

// startEphemeral lets the pod's ephemeral containers run from now on, under
// ctx (the worker's run context: they are left running when the daemon
// stops, for recovery).
func (w *worker) startEphemeral(ctx context.Context, pod *corev1.Pod) {
	e := &w.ephemeral
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ctx = ctx
	if e.latest == nil {
		e.latest = pod
	}
	w.startNewEphemeral()
}

// startNewEphemeral starts a run for every ephemeral container of the
// newest pod that has none. The caller holds e.mu.
func (w *worker) startNewEphemeral() {
	e := &w.ephemeral
	if e.ctx == nil || e.ctx.Err() != nil || e.stopped || e.latest == nil {
		return
	}
	pod := e.latest
	for i := range pod.Spec.EphemeralContainers {
		c := (*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		if _, ok := e.runs[c.Name]; ok {
			continue
		}
		if e.runs == nil {
			e.runs = map[string]*containerRun{}
		}
		r := newContainerRun(w, pod, c, kindEphemeral)
		e.runs[c.Name] = r
		// NOTE: the manager waits for these runs too when the daemon stops.
		e.wg.Add(1)
		w.m.wg.Add(1)
		go func() {
			defer w.m.wg.Done()
			defer e.wg.Done()
			r.run(e.ctx)
		}()
	}
}

// stopEphemeral stops the ephemeral containers once the pod's other
// containers are done, giving them grace after the stop signal, and waits
// for their runs to end. No ephemeral container starts afterwards.
func (w *worker) stopEphemeral(grace time.Duration) {
	e := &w.ephemeral
	e.mu.Lock()
	e.stopped = true
	for _, r := range e.runs {
		r.stop(grace)
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// targetPIDNamespace is the PID namespace an ephemeral container joins:
// its target's, "" without a target.
// NOTE: as containerd CRI does for a target container: the namespace of
// the target's running init process; if the target does not run, the
// container cannot be created (and is retried).
func (r *containerRun) targetPIDNamespace(ctx context.Context) (string, error) {
	target := ephemeralTarget(&r.pod.Spec, r.spec.Name)
	if target == "" {
		return "", nil
	}
	pod, err := r.w.load()
	if err != nil {
		return "", err
	}
	id, ok := runningContainerID(&pod.Status, target)
	if !ok {
		return "", fmt.Errorf("target container %q is not running", target)
	}
	pid, err := r.w.m.cfg.Runtime.PID(ctx, id)
	if err != nil {
		return "", fmt.Errorf("finding the process of target container %q: %w", target, err)
	}
	return fmt.Sprintf("/proc/%d/ns/pid", pid), nil
}

// ephemeralTarget is the targetContainerName of ephemeral container name.
func ephemeralTarget(spec *corev1.PodSpec, name string) string {
	for _, ec := range spec.EphemeralContainers {
		if ec.Name == name {
			return ec.TargetContainerName
		}
	}
	return ""
}

// isEphemeral reports whether name is an ephemeral container of spec.
func isEphemeral(spec *corev1.PodSpec, name string) bool {
	for _, ec := range spec.EphemeralContainers {
		if ec.Name == name {
			return true
		}
	}
	return false
}

// runningContainerID is the containerd ID of a regular or init container's
// running instance, from the pod's status.
func runningContainerID(status *corev1.PodStatus, name string) (string, bool) {
	for _, list := range [][]corev1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses} {
		if cs := kube.ContainerStatus(list, name); cs != nil && cs.State.Running != nil {
			return kube.ParseContainerID(cs.ContainerID)
		}
	}
	return "", false
}

// ephemeralGrace is the grace ephemeral containers get when the pod's
// other containers are done: the deletion's when the pod is being deleted,
// else the pod's terminationGracePeriodSeconds.
func (w *worker) ephemeralGrace(pod *corev1.Pod) time.Duration {
	if w.stopping() {
		return w.stopGrace()
	}
	return deletionGrace(pod)
}
