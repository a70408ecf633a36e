package podworker

import (
	"context"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet/admission"
	"github.com/skiff-sh/skiff/runtime"
)

// Config is the pod worker's configuration.
type Config struct {
	Store    *db.Store
	Runtime  Runtime
	NodeName string
	HostIP   string
	LogRoot  string
	// VolumeRoot holds the pods' volumes (emptyDir, downwardAPI) and
	// termination-message files, one directory per pod UID.
	VolumeRoot string
	// SeccompRoot holds the Localhost seccomp profiles (the kubelet's
	// <root-dir>/seccomp).
	SeccompRoot string
	// SeccompDefault gives a container whose security context names no
	// seccomp profile RuntimeDefault (the kubelet's seccompDefault);
	// without it such a container runs Unconfined, as under a kubelet left
	// at its default.
	SeccompDefault bool
	// CPU and Memory are the node's capacity; ReservedCPU and ReservedMemory
	// are kept from pods (the kubelet's --system-reserved). What is left,
	// the allocatable, bounds the requests of the admitted pods and stands
	// in for unset limits in resourceFieldRef.
	CPU, Memory                 resource.Quantity
	ReservedCPU, ReservedMemory resource.Quantity
	// EphemeralStorage is the capacity of the filesystem holding the data
	// dir, ReservedEphemeralStorage the part kept from pods; zero
	// EphemeralStorage leaves ephemeral-storage requests unchecked.
	EphemeralStorage, ReservedEphemeralStorage resource.Quantity
	// MaxPods caps the pods running at once (the kubelet's --max-pods);
	// 0 = 110.
	MaxPods int
	// MaxContainers caps the containers running at once on the node
	// (--max-containers, see slotPool); 0 = no cap.
	MaxContainers int
	// RestartBackoffBase and RestartBackoffMax are the kubelet's container
	// restart (CrashLoopBackOff) and image-pull back-off: 10s doubling to 5m.
	RestartBackoffBase, RestartBackoffMax time.Duration
	// SweepInterval is how often leftovers that belong to no live pod
	// instance are looked for and removed (sweep.go); 0 = a minute.
	SweepInterval time.Duration
	Now           func() time.Time
	// Network gives pods their own network namespaces; nil = every pod
	// shares the host's network.
	Network Network
	// Recorder records the kubelet's Events, SchedulerRecorder the
	// scheduler's (Scheduled, FailedScheduling); nil = none.
	Recorder, SchedulerRecorder Recorder
	// Metrics are the kubelet's metrics kept here; nil = unregistered ones.
	Metrics *Metrics
	// Tokens issues the ServiceAccount tokens of projected volumes; nil =
	// such volumes fail to set up.
	Tokens TokenRequests
	// RuntimeHandlers map the RuntimeClass handlers this node runs to
	// containerd runtimes ("io.containerd.runc.v2"); New puts them over
	// DefaultRuntimeHandlers.
	RuntimeHandlers map[string]string
}

// Manager runs one worker per Pod of this node.
type Manager struct {
	cfg   Config
	node  nodeInfo
	sched *admission.Scheduler
	slots *slotPool
	// sources reads pods' ConfigMaps and Secrets and wakes their waiters.
	sources *sources

	// ctx is Run's: the daemon's lifetime, which also ends the waits of
	// writes on a full disk; nil before Run (nothing is retried then).
	ctx context.Context
	// retryDelay is the wait before retrying after a transient failure
	// (infraBackoff; tests shorten it).
	retryDelay func(failures int) time.Duration
	mu         sync.Mutex
	workers    map[types.UID]*worker
	wg         sync.WaitGroup
}

// New returns a Manager; Run starts it.
func New(cfg Config) *Manager {
	if cfg.RestartBackoffBase <= 0 {
		cfg.RestartBackoffBase = 10 * time.Second
	}
	if cfg.RestartBackoffMax <= 0 {
		cfg.RestartBackoffMax = 5 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = time.Minute
	}
	cfg.Runtime = instrumentedRuntime{Runtime: cfg.Runtime, metrics: cfg.Metrics}
	if cfg.Network != nil {
		cfg.Network = instrumentedNetwork{Network: cfg.Network, metrics: cfg.Metrics}
	}
	handlers := DefaultRuntimeHandlers()
	maps.Copy(handlers, cfg.RuntimeHandlers)
	cfg.RuntimeHandlers = handlers
	alloc := kube.Allocatable(
		corev1.ResourceList{corev1.ResourceCPU: cfg.CPU, corev1.ResourceMemory: cfg.Memory, corev1.ResourceEphemeralStorage: cfg.EphemeralStorage},
		corev1.ResourceList{corev1.ResourceCPU: cfg.ReservedCPU, corev1.ResourceMemory: cfg.ReservedMemory, corev1.ResourceEphemeralStorage: cfg.ReservedEphemeralStorage})
	cpu, memory, storage := alloc[corev1.ResourceCPU], alloc[corev1.ResourceMemory], alloc[corev1.ResourceEphemeralStorage]
	return &Manager{
		cfg: cfg,
		node: nodeInfo{
			name: cfg.NodeName, hostIP: cfg.HostIP, logRoot: cfg.LogRoot,
			cpu: cpu, memory: memory, storage: storage,
		},
		sched:      admission.NewScheduler(admission.Allocatable{CPU: cpu, Memory: memory, Storage: storage, Pods: cfg.MaxPods}),
		slots:      newSlotPool(cfg.MaxContainers),
		sources:    newSources(cfg.Store, newTokens(cfg.Tokens, cfg.Now)),
		workers:    map[types.UID]*worker{},
		retryDelay: infraBackoff,
	}
}

func (m *Manager) now() time.Time { return m.cfg.Now() }

// Run recovers the pods and containers left by a previous run, then follows
// pod changes until ctx ends, sweeping leftovers every SweepInterval. When
// it returns, containers keep running.
//
// Pods are followed on the controller skeleton: one list (the recovery),
// then the watch, which a break resumes from the store's change log or
// replaces with a relist turned into the changes since. Either way a broken
// watch costs no new look at containerd: the workers already running keep
// their containers, and only pods created or deleted meanwhile are started
// or forgotten.
func (m *Manager) Run(ctx context.Context) error {
	m.ctx = ctx
	defer m.wg.Wait()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.sweepEvery(ctx, m.cfg.SweepInterval)
	}()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.sources.follow(ctx)
	}()
	found, ok := m.listLeftoversUntilDone(ctx)
	if !ok {
		return nil
	}
	loop := controller.New(controller.Config[struct{}]{ // no keys: each pod has its own worker
		Name:  "pod worker",
		Store: m.cfg.Store,
		Watches: []controller.Watch{{
			Resource: db.Pods,
			OnList:   func(objs []db.Object) { m.recover(ctx, found, objs) },
			OnEvent: func(ev db.Event) {
				pod := ev.Object.(*corev1.Pod)
				if ev.Type == watch.Deleted {
					m.forget(pod)
					return
				}
				m.observe(ctx, pod, nil)
			},
		}},
	})
	return loop.Run(ctx)
}

// listLeftoversUntilDone lists what earlier runs left (containerd's
// containers, pod networks, log and volume directories), retried with
// back-off while that fails (containerd restarting); ok is false when ctx
// ended first.
func (m *Manager) listLeftoversUntilDone(ctx context.Context) (podLeftovers, bool) {
	for failures := 0; ; failures++ {
		found, err := m.listLeftovers(ctx)
		if err == nil {
			return found, true
		}
		if ctx.Err() != nil {
			return found, false
		}
		logrus.WithError(err).Warn("recovering pods; retrying")
		select {
		case <-ctx.Done():
			return found, false
		case <-time.After(m.retryDelay(failures)):
		}
	}
}

// recover starts a worker for every stored pod (objs, listed after found)
// that is not finished, handing each the containers containerd still has
// of it, and removes what belongs to pods that no longer exist (containers,
// networks, logs, volumes) and what finished pods left (all but their
// logs).
func (m *Manager) recover(ctx context.Context, found podLeftovers, objs []db.Object) {
	byPod := map[types.UID][]runtime.Container{}
	for _, c := range found.containers {
		uid := types.UID(c.Labels[runtime.LabelPodUID])
		byPod[uid] = append(byPod[uid], c)
	}
	known := make(map[types.UID]*corev1.Pod, len(objs))
	for _, obj := range objs {
		if pod := obj.(*corev1.Pod); m.isOurs(pod) && wasAdmitted(pod) {
			m.sched.Bind(pod.UID, &pod.Spec) // before any new pod is let in
		}
	}
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		known[pod.UID] = pod
		m.observe(ctx, pod, byPod[pod.UID])
	}
	m.sched.Start()
	m.removeLeftovers(found, known)
}

func (m *Manager) isOurs(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" || pod.Spec.NodeName == m.cfg.NodeName
}

// observe reacts to the current state of a pod: a worker for a new pod,
// termination for a pod being deleted.
func (m *Manager) observe(ctx context.Context, pod *corev1.Pod, adopted []runtime.Container) {
	if !m.isOurs(pod) {
		return
	}
	m.mu.Lock()
	w, ok := m.workers[pod.UID]
	if !ok && isFinished(pod) {
		// NOTE: a finished pod without a worker is one an earlier run
		// finished: nothing of it will run again and its status is final,
		// so it gets no worker (which would only read it again: 10000
		// finished pods made a restart's CPU and memory peak). What it
		// left is removeLeftovers' (podDone).
		m.mu.Unlock()
		return
	}
	if !ok {
		w = newWorker(m, pod, adopted)
		m.workers[pod.UID] = w
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			w.run(ctx)
		}()
	}
	m.mu.Unlock()
	if ok && pod.DeletionTimestamp == nil {
		w.changed(pod)
	}
	if ok && pod.DeletionTimestamp != nil {
		select {
		case <-w.done:
			w.finishDeletion() // nothing runs any more: complete the delete
		default:
			w.terminate(deletionGrace(pod))
		}
	}
}

// forget handles a pod removed from the store: its containers are stopped
// at once and removed, and its logs go with it.
func (m *Manager) forget(pod *corev1.Pod) {
	m.mu.Lock()
	w, ok := m.workers[pod.UID]
	delete(m.workers, pod.UID)
	m.mu.Unlock()
	dir := kube.PodLogDir(m.cfg.LogRoot, pod)
	if !ok {
		m.removeLogs(dir)
		m.removeVolumes(pod)
		m.teardownSandbox(pod.UID, pod)
		return
	}
	w.terminate(0)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		<-w.done
		m.removeLogs(dir)
		m.removeVolumes(pod)
		m.teardownSandbox(pod.UID, pod) // in case the worker ended before its own
	}()
}

// isFinished reports whether the pod's status is final and no deletion
// waits on its containers.
func isFinished(pod *corev1.Pod) bool {
	return kube.IsPodTerminal(pod) && pod.DeletionTimestamp == nil
}

// wasAdmitted reports whether an earlier run admitted the pod to the node
// and it has not finished: it holds its place on the node.
func wasAdmitted(pod *corev1.Pod) bool {
	return !kube.IsPodTerminal(pod) && pod.Status.StartTime != nil && isScheduled(&pod.Status)
}

// removeVolumes removes the volumes of a pod that is gone.
func (m *Manager) removeVolumes(pod *corev1.Pod) {
	m.sources.tokens.forget(pod.UID)
	if err := tearDownVolumes(m.cfg.VolumeRoot, pod); err != nil {
		logrus.WithError(err).WithField("pod", pod.Namespace+"/"+pod.Name).Error("removing pod volumes")
	}
}

func (m *Manager) removeLogs(dir string) {
	if err := os.RemoveAll(dir); err != nil {
		logrus.WithError(err).WithField("dir", dir).Error("removing pod logs")
	}
}
