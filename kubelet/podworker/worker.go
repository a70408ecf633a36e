package podworker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/failpoint"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet/admission"
	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
)

// errPodGone: the pod this worker runs is no longer in the store (or the
// name now belongs to another pod).
var errPodGone = errors.New("pod gone")

// minGrace is the shortest time the kubelet gives a container between its
// stop signal and SIGKILL (minimumGracePeriodInSeconds).
const minGrace = 2 * time.Second

// worker runs one pod: admission, its containers, their restarts, and its
// termination. Its two lifetimes are kept apart: the ctx given to run ends
// when the daemon stops (containers are left running for recovery), while
// terminate stops the pod's containers for good.
type worker struct {
	m         *Manager
	uid       types.UID
	ns        string
	name      string
	log       *logrus.Entry
	adopted   map[string][]runtime.Container // recovered instances by container name
	updates   chan *corev1.Pod               // newer versions of the pod (latest only)
	volumes   map[string]podVolume           // set up before any container runs
	sandbox   network.Sandbox                // the pod's network, once set up
	specs     specUpdates                    // changed container definitions (update.go)
	ephemeral ephemeralRuns                  // ephemeral containers (ephemeral.go)
	refresh   *volumeRefresh                 // keeps configMap/secret volumes current (volumes_sources.go)
	start     startTracker                   // toward the pod start SLI (metrics.go)

	// runtimeType is the containerd runtime of the pod's containers, once
	// the sandbox is set up (podRuntimeType).
	runtimeType string

	stopOnce sync.Once
	stop     chan struct{} // closed by terminate
	mu       sync.Mutex
	grace    time.Duration
	terminal bool   // every container is final: the phase may settle
	reason   string // pod-level failure (DeadlineExceeded), written with the final phase
	message  string

	// settled: the pod's final status is written and none of its
	// containers will run again; what is left of them is the sweep's.
	settled atomic.Bool
	done    chan struct{}
}

func newWorker(m *Manager, pod *corev1.Pod, adopted []runtime.Container) *worker {
	w := &worker{
		m:       m,
		uid:     pod.UID,
		ns:      pod.Namespace,
		name:    pod.Name,
		log:     logrus.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name}),
		adopted: map[string][]runtime.Container{},
		updates: make(chan *corev1.Pod, 1),
		stop:    make(chan struct{}),
		grace:   -1,
		done:    make(chan struct{}),
	}
	for _, c := range adopted {
		name := c.Labels[runtime.LabelContainerName]
		w.adopted[name] = append(w.adopted[name], c)
	}
	return w
}

// terminate stops the pod's containers, giving them grace to exit after
// the stop signal. A later call can only shorten the grace.
func (w *worker) terminate(grace time.Duration) {
	w.mu.Lock()
	if w.grace < 0 || grace < w.grace {
		w.grace = grace
	}
	w.mu.Unlock()
	w.stopOnce.Do(func() { close(w.stop) })
}

// changed hands the worker a newer version of its pod.
func (w *worker) changed(pod *corev1.Pod) {
	select {
	case <-w.updates:
	default:
	}
	w.updates <- pod
	w.containersChanged(pod)
	w.ephemeralChanged(pod)
}

func (w *worker) stopping() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *worker) stopGrace() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.grace, 0)
}

func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	defer w.stopVolumeRefresh()
	pod, err := w.load()
	if err != nil {
		return
	}
	if kube.IsPodTerminal(pod) {
		w.removeAdopted()
		w.tearDownVolumes(pod)
		w.m.teardownSandbox(w.uid, pod)
		w.settled.Store(true)
		w.finishDeletion()
		return
	}
	if pod.DeletionTimestamp != nil {
		w.terminate(deletionGrace(pod))
	}
	defer w.m.sched.Release(w.uid)
	if !w.waitAdmission(ctx, pod) {
		if ctx.Err() == nil && w.stopping() {
			w.finishDeletion()
		}
		return
	}
	if msg := forbiddenSysctl(pod, w.m.usesHostNetwork(pod)); msg != "" {
		w.reject(reasonSysctlForbidden, msg)
		return
	}
	volumes := w.tryVolumes(pod)
	pod, ok := w.admitWithSandbox(ctx, pod)
	if !ok {
		volumes.wait() // NOTE: what it made is the pod's teardown's or the sweep's
		return
	}
	deadlineCtx, stopDeadline := context.WithCancel(ctx)
	go w.enforceDeadline(deadlineCtx, pod)
	ok = w.runPod(ctx, pod, volumes)
	stopDeadline()
	if !ok || ctx.Err() != nil {
		return // the daemon is stopping: leave the pod for recovery
	}
	w.finish(pod)
}

// runPod sets up the pod's volumes (volumes is the first attempt, under
// way) and runs its containers until they are all done; false when the
// daemon stops or the pod is gone.
func (w *worker) runPod(ctx context.Context, pod *corev1.Pod, volumes *volumesAttempt) bool {
	if !w.setUpVolumes(ctx, pod, volumes) {
		return ctx.Err() == nil
	}
	w.startEphemeral(ctx, pod)
	sidecars, ok := w.runInit(ctx, pod)
	// NOTE: also for a pod being deleted: its containers start nothing
	// (start checks), but those an earlier run left running are stopped as
	// the deletion says (grace, preStop), not removed with the pod.
	if ok && ctx.Err() == nil {
		ok = w.runRegular(ctx, pod)
	}
	if ctx.Err() != nil {
		return false
	}
	w.stopEphemeral(w.ephemeralGrace(pod))
	w.stopSidecars(pod, sidecars)
	return true
}

// finish writes the final status once no container runs any more, then
// releases the pod's resources and completes a pending deletion.
func (w *worker) finish(pod *corev1.Pod) {
	w.mu.Lock()
	w.terminal = true
	w.mu.Unlock()
	if _, err := w.update(func(*corev1.Pod) {}); err != nil && !errors.Is(err, errPodGone) {
		w.logError("writing final pod status", err)
	}
	failpoint.Hit(failpoint.AfterPodFinished)
	w.removeAdopted()
	w.tearDownVolumes(pod)
	w.m.teardownSandbox(w.uid, pod)
	w.settled.Store(true)
	if w.stopping() {
		w.finishDeletion()
	}
}

// reject fails the pod at admission, as the kubelet's admit handlers do:
// phase Failed with the reason, and the message "Pod was rejected: …".
func (w *worker) reject(reason, message string) {
	w.log.WithField("reason", reason).Warn("pod rejected: " + message)
	w.event(corev1.EventTypeWarning, reason, "%s", message)
	w.mu.Lock()
	w.terminal, w.reason, w.message = true, reason, "Pod was rejected: "+message
	w.mu.Unlock()
	_, err := w.update(func(p *corev1.Pod) {
		setCondition(&p.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, metav1.NewTime(w.m.now()))
	})
	if err != nil {
		w.logError("rejecting pod", err)
	} else {
		w.settled.Store(true)
	}
	if w.stopping() {
		w.finishDeletion()
	}
}

// runInit runs the init containers one by one: each regular one to its
// successful end, each sidecar until it has started (it keeps running).
// ok is false when an init container failed for good or the run must end.
func (w *worker) runInit(ctx context.Context, pod *corev1.Pod) (sidecars []*containerRun, ok bool) {
	initialized := hasRunRegular(pod.Status.ContainerStatuses)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if kube.IsSidecar(c) {
			r := newContainerRun(w, pod, c, kindSidecar)
			sidecars = append(sidecars, r)
			r.done = make(chan struct{})
			go func() {
				defer close(r.done)
				r.run(ctx)
			}()
			if initialized {
				continue // recovered: the regular containers do not wait again
			}
			select {
			case <-r.startedCh:
			case <-w.stop:
				return sidecars, false
			case <-ctx.Done():
				return sidecars, false
			}
			continue
		}
		r := newContainerRun(w, pod, c, kindInit)
		if initialized || r.completed() {
			r.discard()
			continue
		}
		succeeded, runOK := r.run(ctx)
		if !runOK || !succeeded {
			return sidecars, false
		}
	}
	return sidecars, true
}

// runRegular runs the regular containers side by side until each is done,
// starting them one after the other in spec order (order.go). Containers
// found running or already run (a restart of skiffd) do not wait.
func (w *worker) runRegular(ctx context.Context, pod *corev1.Pod) bool {
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := true
	ordered := !hasRunRegular(pod.Status.ContainerStatuses)
	var prev *containerRun
	for i := range pod.Spec.Containers {
		r := newContainerRun(w, pod, &pod.Spec.Containers[i], kindRegular)
		if !ordered || r.instance != nil {
			r.passTurn()
		}
		after := prev
		prev = r
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.passTurn()
			runOK := r.waitTurn(ctx, after)
			if runOK {
				_, runOK = r.run(ctx)
			}
			if !runOK {
				mu.Lock()
				ok = false
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ok
}

// stopSidecars stops the sidecars once the other containers are done, in
// the reverse of their order, as the kubelet does; each gets what is left
// of the pod's grace period (at least minGrace).
func (w *worker) stopSidecars(pod *corev1.Pod, sidecars []*containerRun) {
	if len(sidecars) == 0 {
		return
	}
	grace := deletionGrace(pod)
	if w.stopping() {
		grace = w.stopGrace()
	}
	deadline := w.m.now().Add(grace)
	for i := len(sidecars) - 1; i >= 0; i-- {
		sidecars[i].stop(deadline.Sub(w.m.now()))
		<-sidecars[i].done
	}
}

// waitAdmission waits until the scheduler finds room for the pod, showing
// why it waits as the scheduler does; false when the pod is stopped first.
func (w *worker) waitAdmission(ctx context.Context, pod *corev1.Pod) bool {
	t := w.m.sched.Enqueue(pod)
	select {
	case <-t.Admitted():
		return true
	default:
	}
	msg := admission.UnschedulableMessage(w.m.sched.WhyWaiting(t))
	w.log.WithField("reason", msg).Info("pod does not fit the node; waiting")
	w.schedulerEvent(corev1.EventTypeWarning, "FailedScheduling", "%s", msg)
	_, err := w.update(func(p *corev1.Pod) {
		setCondition(&p.Status, corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: reasonUnschedulable, Message: msg,
		}, metav1.NewTime(w.m.now()))
	})
	if err != nil {
		w.logError("recording unschedulable pod", err)
	}
	select {
	case <-t.Admitted():
		return err == nil
	case <-w.stop:
	case <-ctx.Done():
	}
	return false
}

func (w *worker) load() (*corev1.Pod, error) {
	obj, err := w.m.cfg.Store.Get(db.Pods, w.ns, w.name)
	if errors.Is(err, db.ErrNotFound) {
		return nil, errPodGone
	}
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	if pod.UID != w.uid {
		return nil, errPodGone
	}
	return pod, nil
}

// admit binds the pod to this node and writes the kubelet's first status:
// Pending, startTime, hostIP/podIP, QoS class, and every container waiting
// in ContainerCreating (PodInitializing when there are init containers);
// also applies to the status in the same write (the pod network's
// outcome).
func (w *worker) admit(also func(p *corev1.Pod)) (*corev1.Pod, error) {
	now := metav1.NewTime(w.m.now())
	scheduled := true
	pod, err := w.update(func(p *corev1.Pod) {
		scheduled = hasScheduledCondition(&p.Status)
		if p.Spec.NodeName == "" {
			p.Spec.NodeName = w.m.cfg.NodeName
		}
		setCondition(&p.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, now)
		if p.Status.StartTime == nil {
			p.Status.StartTime = &now
		}
		ip := w.m.cfg.HostIP
		p.Status.HostIP = ip
		p.Status.HostIPs = []corev1.HostIP{{IP: ip}}
		if w.m.cfg.Network == nil {
			setPodIP(&p.Status, ip) // the host's network
		}
		p.Status.QOSClass = kube.QOSClass(&p.Spec)
		reason := reasonContainerCreating
		if len(p.Spec.InitContainers) > 0 {
			reason = reasonPodInitializing
		}
		p.Status.InitContainerStatuses = initialStatuses(p.Status.InitContainerStatuses, p.Spec.InitContainers, reason)
		p.Status.ContainerStatuses = initialStatuses(p.Status.ContainerStatuses, p.Spec.Containers, reason)
		also(p)
	})
	if err == nil && !scheduled {
		w.schedulerEvent(corev1.EventTypeNormal, "Scheduled", "Successfully assigned %s/%s to %s", w.ns, w.name, pod.Spec.NodeName)
	}
	return pod, err
}

// initialStatuses adds a waiting status for every container without one.
func initialStatuses(statuses []corev1.ContainerStatus, containers []corev1.Container, reason string) []corev1.ContainerStatus {
	for _, c := range containers {
		if kube.ContainerStatus(statuses, c.Name) != nil {
			continue
		}
		statuses = append(statuses, corev1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			Started: ptr(false),
			State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
		})
	}
	sortStatuses(statuses, containers)
	return statuses
}

// update applies mutate to the stored pod and recomputes the phase and the
// kubelet's conditions, in one transaction. A terminal phase never changes;
// one is only written once every container is stopped for good, as the
// kubelet's status manager holds it back while containers may still run.
func (w *worker) update(mutate func(pod *corev1.Pod)) (*corev1.Pod, error) {
	w.mu.Lock()
	terminal, reason, message := w.terminal, w.reason, w.message
	w.mu.Unlock()
	obj, err := w.m.modify(db.Pods, w.ns, w.name, func(obj db.Object) error {
		pod := obj.(*corev1.Pod)
		if pod.UID != w.uid {
			return errPodGone
		}
		before := pod.DeepCopy()
		mutate(pod)
		if !kube.IsPodTerminal(before) {
			w.settlePhase(pod, terminal, reason, message)
		}
		if isScheduled(&pod.Status) {
			setConditions(pod, metav1.NewTime(w.m.now()))
		}
		if equality.Semantic.DeepEqual(before, pod) {
			return db.ErrUnchanged
		}
		return nil
	})
	if errors.Is(err, db.ErrNotFound) {
		return nil, errPodGone
	}
	if err != nil {
		return nil, err
	}
	pod := obj.(*corev1.Pod)
	w.m.cfg.Metrics.observeStatus(&w.start, pod, w.m.now())
	return pod, nil
}

// settlePhase computes the pod's phase (and, once terminal, its final
// container states and pod-level reason).
func (w *worker) settlePhase(pod *corev1.Pod, terminal bool, reason, message string) {
	st := &pod.Status
	phase := podPhase(&pod.Spec, st.InitContainerStatuses, st.ContainerStatuses, terminal, hasRunRegular(st.ContainerStatuses))
	if !terminal {
		if !kube.IsPodPhaseTerminal(phase) {
			st.Phase = phase
		}
		return
	}
	st.Phase = phase
	terminateStatus(&pod.Spec, st)
	if reason != "" {
		st.Phase, st.Reason, st.Message = corev1.PodFailed, reason, message
	}
}

// isScheduled reports whether the pod was admitted to the node (its
// PodScheduled condition is not False).
func isScheduled(status *corev1.PodStatus) bool {
	c := findCondition(status, corev1.PodScheduled)
	return c == nil || c.Status == corev1.ConditionTrue
}

// updateContainer applies mutate to one container's status (an init
// container's when init is true).
func (w *worker) updateContainer(name string, init bool, mutate func(cs *corev1.ContainerStatus)) error {
	_, err := w.update(func(pod *corev1.Pod) {
		list := &pod.Status.ContainerStatuses
		switch {
		case isEphemeral(&pod.Spec, name):
			list = &pod.Status.EphemeralContainerStatuses
		case init:
			list = &pod.Status.InitContainerStatuses
		}
		cs := kube.ContainerStatus(*list, name)
		if cs == nil {
			*list = append(*list, corev1.ContainerStatus{Name: name})
			cs = &(*list)[len(*list)-1]
		}
		mutate(cs)
	})
	return err
}

// finishDeletion completes a graceful deletion once the containers are
// stopped: the kubelet's final delete with grace 0, which removes the pod
// unless finalizers still hold it.
func (w *worker) finishDeletion() {
	err := w.m.write(func(tx *db.Tx) error {
		obj, err := tx.Get(db.Pods, w.ns, w.name)
		if err != nil {
			return err
		}
		if obj.GetUID() != w.uid || obj.GetDeletionTimestamp() == nil {
			return nil
		}
		_, _, err = tx.DeleteGracefully(db.Pods, w.ns, w.name, 0)
		return err
	})
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		w.logError("finishing pod deletion", err)
	}
}

// takeAdopted hands the recovered instances of one container to its run.
func (w *worker) takeAdopted(name string) []runtime.Container {
	w.mu.Lock()
	defer w.mu.Unlock()
	found := w.adopted[name]
	delete(w.adopted, name)
	return found
}

// removeAdopted removes recovered instances that no container loop took over.
func (w *worker) removeAdopted() {
	w.mu.Lock()
	adopted := w.adopted
	w.adopted = map[string][]runtime.Container{}
	w.mu.Unlock()
	for _, list := range adopted {
		for _, c := range list {
			w.removeInstance(c.ID)
		}
	}
}

// removeInstance removes instance id (its exit, if it ran, is recorded);
// the manager retries a removal that fails until it is done.
func (w *worker) removeInstance(id string) {
	if id != "" {
		w.m.removeInstance(id)
	}
}

func (w *worker) logError(what string, err error) {
	if errors.Is(err, errPodGone) {
		return
	}
	w.log.WithError(err).Error(what)
}

// deletionGrace is how long the pod's containers get after the stop signal.
func deletionGrace(pod *corev1.Pod) time.Duration {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

func ptr[T any](v T) *T { return &v }
