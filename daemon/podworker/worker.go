package podworker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
)

// errPodGone: the pod this worker runs is no longer in the store (or the
// name now belongs to another pod).
var errPodGone = errors.New("pod gone")

// worker runs one pod: admission, its containers, their restarts, and its
// termination. Its two lifetimes are kept apart: the ctx given to run ends
// when the daemon stops (containers are left running for recovery), while
// terminate stops the pod's containers for good.
type worker struct {
	m       *Manager
	uid     types.UID
	ns      string
	name    string
	log     *logrus.Entry
	adopted map[string][]runtime.Container // recovered instances by container name
	sandbox network.Sandbox                // the pod's network, set before any container starts

	stopOnce sync.Once
	stop     chan struct{} // closed by terminate
	mu       sync.Mutex
	grace    time.Duration
	terminal bool // every container is final: the phase may settle

	done chan struct{}
}

func newWorker(m *Manager, pod *corev1.Pod, adopted []runtime.Container) *worker {
	w := &worker{
		m:       m,
		uid:     pod.UID,
		ns:      pod.Namespace,
		name:    pod.Name,
		log:     logrus.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name}),
		adopted: map[string][]runtime.Container{},
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
	pod, err := w.load()
	if err != nil {
		return
	}
	if isTerminal(pod) {
		w.removeAdopted()
		w.m.teardownSandbox(w.uid)
		w.finishDeletion()
		return
	}
	if pod.DeletionTimestamp != nil {
		w.terminate(deletionGrace(pod))
	}
	pod, err = w.admit(pod)
	if err != nil {
		w.logError("admitting pod", err)
		return
	}
	pod, ok := w.startSandbox(ctx, pod)
	if !ok {
		return
	}
	var wg sync.WaitGroup
	for i := range pod.Spec.Containers {
		r := newContainerRun(w, pod, &pod.Spec.Containers[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.run(ctx)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // the daemon is stopping: leave the pod for recovery
	}
	w.mu.Lock()
	w.terminal = true
	w.mu.Unlock()
	if _, err := w.update(func(*corev1.Pod) {}); err != nil && !errors.Is(err, errPodGone) {
		w.logError("writing final pod status", err)
	}
	w.removeAdopted()
	w.m.teardownSandbox(w.uid)
	if w.stopping() {
		w.finishDeletion()
	}
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
// Pending, startTime, hostIP/podIP, and every container waiting in
// ContainerCreating.
func (w *worker) admit(pod *corev1.Pod) (*corev1.Pod, error) {
	now := metav1.NewTime(w.m.now())
	return w.update(func(p *corev1.Pod) {
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
		if w.m.cfg.Network == nil || p.Spec.HostNetwork {
			setPodIP(&p.Status, ip) // else startSandbox sets the pod's own
		}
		for _, c := range p.Spec.Containers {
			if findStatus(p.Status.ContainerStatuses, c.Name) != nil {
				continue
			}
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name:    c.Name,
				Image:   c.Image,
				Started: ptr(false),
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: reasonContainerCreating,
				}},
			})
		}
	})
}

// update applies mutate to the stored pod and recomputes the phase and the
// kubelet's conditions, in one transaction. A terminal phase never changes.
func (w *worker) update(mutate func(pod *corev1.Pod)) (*corev1.Pod, error) {
	w.mu.Lock()
	terminal := w.terminal
	w.mu.Unlock()
	obj, err := w.m.cfg.Store.Modify(db.Pods, w.ns, w.name, func(obj db.Object) error {
		pod := obj.(*corev1.Pod)
		if pod.UID != w.uid {
			return errPodGone
		}
		before := pod.DeepCopy()
		mutate(pod)
		if !isTerminal(before) {
			pod.Status.Phase = podPhase(&pod.Spec, pod.Status.ContainerStatuses, terminal)
		}
		setConditions(&pod.Status, &pod.Spec, metav1.NewTime(w.m.now()))
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
	return obj.(*corev1.Pod), nil
}

// updateContainer applies mutate to one container's status.
func (w *worker) updateContainer(name string, mutate func(cs *corev1.ContainerStatus)) error {
	_, err := w.update(func(pod *corev1.Pod) {
		cs := findStatus(pod.Status.ContainerStatuses, name)
		if cs == nil {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: name})
			cs = &pod.Status.ContainerStatuses[len(pod.Status.ContainerStatuses)-1]
		}
		mutate(cs)
	})
	return err
}

// finishDeletion completes a graceful deletion once the containers are
// stopped: the kubelet's final delete with grace 0, which removes the pod
// unless finalizers still hold it.
func (w *worker) finishDeletion() {
	err := w.m.cfg.Store.Write(func(tx *db.Tx) error {
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

// removeAdopted removes recovered instances that no container loop took over.
func (w *worker) removeAdopted() {
	for name, list := range w.adopted {
		for _, c := range list {
			w.removeInstance(c.ID)
		}
		delete(w.adopted, name)
	}
}

func (w *worker) removeInstance(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := w.m.cfg.Runtime.Remove(ctx, id); err != nil {
		w.logError("removing container "+id, err)
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

func containerIDString(id string) string { return fmt.Sprintf("containerd://%s", id) }
