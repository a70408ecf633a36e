// Package tainteviction is kube-controller-manager's taint eviction
// controller: a pod bound to a node with a NoExecute taint it does not
// tolerate is deleted, at once, or after the least tolerationSeconds of
// the tolerations it uses (kube.NoExecuteEviction); removing the taint, or
// deleting the pod, in time cancels the eviction. An evicted pod gets the
// DisruptionTarget condition (DeletionByTaintManager) and is deleted
// gracefully, in one transaction; the TaintManagerEviction events say when
// a deletion is marked and when one is cancelled. It talks only to the
// store, and runs on package controller's skeleton.
//
// NOTE: as in kube, the pending evictions live in memory: after a restart
// of skiffd the first list finds the tainted nodes again and each pod's
// tolerationSeconds is counted anew from then (kube-controller-manager's
// restart does the same), so an eviction is delayed by the restart, never
// lost. A pod already being deleted is left alone: its deletion is under
// way.
package tainteviction

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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/daemon/events"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// Component is the source of the controller's events, as
// kube-controller-manager names it.
const Component = "taint-eviction-controller"

// The condition an evicted pod gets (kube's words).
const (
	reasonDeletionByTaintManager  = "DeletionByTaintManager"
	messageDeletionByTaintManager = "Taint manager: deleting due to NoExecute taint"
	reasonTaintManagerEviction    = "TaintManagerEviction"
)

// Config configures the controller.
type Config struct {
	Store    *db.Store
	Recorder *events.Recorder
	// Clock tells the time and runs the eviction timers; nil = real.
	Clock clock.WithDelayedExecution
}

// Controller evicts pods from NoExecute-tainted nodes. Create it with New,
// start it with Run.
type Controller struct {
	store    *db.Store
	recorder *events.Recorder
	clock    clock.Clock
	loop     *controller.Loop[key]

	mu sync.Mutex
	// seen are the NoExecute taints of each node as the handler last saw
	// them; tainted as the last sync of the node found them.
	seen, tainted map[string][]corev1.Taint
	// scheduled are the pending evictions.
	scheduled map[podName]eviction
}

type podName struct{ namespace, name string }

func (p podName) String() string { return p.namespace + "/" + p.name }

// eviction is a pending eviction: decided at createdAt, due at fireAt.
type eviction struct{ createdAt, fireAt time.Time }

type keyKind int

const (
	nodeKey  keyKind = iota // a node whose NoExecute taints changed
	podKey                  // a pod on a tainted node, or with an eviction pending
	evictKey                // a pod whose eviction may be due
)

type key struct {
	kind keyKind
	pod  podName // the node's name in pod.name for a nodeKey
}

// New returns a taint eviction controller; zero Config fields take their
// defaults.
func New(cfg Config) *Controller {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &Controller{
		store: cfg.Store, recorder: cfg.Recorder, clock: cfg.Clock,
		seen: map[string][]corev1.Taint{}, tainted: map[string][]corev1.Taint{}, scheduled: map[podName]eviction{},
	}
	c.loop = controller.New(controller.Config[key]{
		Name:  "taint eviction",
		Store: cfg.Store,
		// Nodes first: the pods of a tainted node are then all looked at
		// by the node's sync.
		Watches: []controller.Watch{
			{Resource: db.Nodes, OnEvent: c.onNodeEvent},
			{Resource: db.Pods, OnEvent: c.onPodEvent},
		},
		Sync:  c.sync,
		Clock: cfg.Clock,
	})
	return c
}

// Run follows nodes and pods and evicts until ctx ends (nil) or the store
// closes.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// onNodeEvent queues a node whose NoExecute taints changed.
func (c *Controller) onNodeEvent(ev db.Event) {
	name := ev.Object.GetName()
	var taints []corev1.Taint
	if node, ok := ev.Object.(*corev1.Node); ok && ev.Type != watch.Deleted {
		taints = kube.NoExecuteTaints(node.Spec.Taints)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, known := c.seen[name]
	if known && equality.Semantic.DeepEqual(old, taints) || !known && len(taints) == 0 {
		return
	}
	if len(taints) == 0 {
		delete(c.seen, name)
	} else {
		c.seen[name] = taints
	}
	c.loop.Add(key{kind: nodeKey, pod: podName{name: name}})
}

// onPodEvent queues a pod bound to a tainted node (its tolerations or its
// node may have changed) or whose eviction is pending (it may be gone).
func (c *Controller) onPodEvent(ev db.Event) {
	p := podName{ev.Object.GetNamespace(), ev.Object.GetName()}
	pod, _ := ev.Object.(*corev1.Pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	_, pending := c.scheduled[p]
	if pending || pod != nil && len(c.tainted[pod.Spec.NodeName]) > 0 {
		c.loop.Add(key{kind: podKey, pod: p})
	}
}

func (c *Controller) sync(ctx context.Context, k key) error {
	switch k.kind {
	case nodeKey:
		return c.syncNode(k.pod.name)
	case podKey:
		return c.syncPod(k.pod)
	default:
		return c.evictIfDue(k.pod)
	}
}

// syncNode records the node's NoExecute taints and decides for each of
// its pods: evictions cancelled when no taint is left, else each pod
// processed against the taints.
func (c *Controller) syncNode(name string) error {
	obj, err := c.store.Get(db.Nodes, "", name)
	if errors.Is(err, db.ErrNotFound) {
		// NOTE: as kube, a deleted node's pending evictions stand.
		c.mu.Lock()
		delete(c.tainted, name)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	taints := kube.NoExecuteTaints(obj.(*corev1.Node).Spec.Taints)
	c.mu.Lock()
	if len(taints) == 0 {
		delete(c.tainted, name)
	} else {
		c.tainted[name] = taints
	}
	pending := len(c.scheduled) > 0
	c.mu.Unlock()
	if len(taints) == 0 && !pending {
		return nil
	}
	pods, _, err := c.store.List(db.Pods, "", nil)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	for _, obj := range pods {
		pod := obj.(*corev1.Pod)
		if pod.Spec.NodeName != name {
			continue
		}
		c.process(pod, taints, now)
	}
	return nil
}

// syncPod cancels the eviction of a pod that is gone, and processes a pod
// on a tainted node against its node's taints.
func (c *Controller) syncPod(p podName) error {
	obj, err := c.store.Get(db.Pods, p.namespace, p.name)
	if errors.Is(err, db.ErrNotFound) {
		c.cancel(p)
		return nil
	}
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	c.mu.Lock()
	taints := c.tainted[pod.Spec.NodeName]
	c.mu.Unlock()
	if len(taints) > 0 {
		c.process(pod, taints, c.clock.Now())
	}
	return nil
}

// process decides for one pod against its node's NoExecute taints:
// cancel (tolerated for good, or no taint), evict now (a taint not
// tolerated), or evict once its tolerationSeconds have passed. An eviction
// already pending stands, as kube keeps the work it queued first.
func (c *Controller) process(pod *corev1.Pod, taints []corev1.Taint, now time.Time) {
	p := podName{pod.Namespace, pod.Name}
	if pod.DeletionTimestamp != nil {
		return
	}
	delay, evict := kube.NoExecuteEviction(taints, pod.Spec.Tolerations)
	if !evict {
		c.cancel(p)
		return
	}
	c.mu.Lock()
	cur, pending := c.scheduled[p]
	c.mu.Unlock()
	if pending && (delay > 0 || !cur.fireAt.After(now)) {
		return
	}
	if pending {
		c.cancel(p) // a taint no longer tolerated: at once instead
	}
	c.mu.Lock()
	c.scheduled[p] = eviction{createdAt: now, fireAt: now.Add(delay)}
	c.mu.Unlock()
	c.loop.AddAfter(key{kind: evictKey, pod: p}, delay)
}

// cancel drops the pod's pending eviction, with kube's event if there was
// one.
func (c *Controller) cancel(p podName) {
	c.mu.Lock()
	_, pending := c.scheduled[p]
	delete(c.scheduled, p)
	c.mu.Unlock()
	if pending {
		c.recorder.Event(podRef(p), corev1.EventTypeNormal, reasonTaintManagerEviction, "Cancelling deletion of Pod %s", p)
	}
}

// evictIfDue evicts the pod if its eviction is still pending and due (a
// timer of a cancelled or later eviction finds nothing to do, or waits
// again).
func (c *Controller) evictIfDue(p podName) error {
	c.mu.Lock()
	ev, pending := c.scheduled[p]
	c.mu.Unlock()
	if !pending {
		return nil
	}
	if wait := ev.fireAt.Sub(c.clock.Now()); wait > 0 {
		c.loop.AddAfter(key{kind: evictKey, pod: p}, wait)
		return nil
	}
	logrus.WithField("pod", p.String()).Info("evicting pod from a NoExecute-tainted node")
	c.recorder.Event(podRef(p), corev1.EventTypeNormal, reasonTaintManagerEviction, "Marking for deletion Pod %s", p)
	if err := c.evict(p); err != nil {
		return fmt.Errorf("evicting pod %s: %w", p, err)
	}
	c.mu.Lock()
	if cur, ok := c.scheduled[p]; ok && cur == ev {
		delete(c.scheduled, p)
	}
	c.mu.Unlock()
	return nil
}

// evict marks the pod with the DisruptionTarget condition and deletes it
// gracefully, in one transaction (kube's addConditionAndDeletePod).
func (c *Controller) evict(p podName) error {
	return c.store.Write(func(tx *db.Tx) error {
		obj, err := tx.Get(db.Pods, p.namespace, p.name)
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		pod := obj.(*corev1.Pod)
		if kube.SetPodCondition(&pod.Status, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			// NOTE: PodObservedGenerationTracking is on in v1.34: the
			// condition observes the pod's generation.
			ObservedGeneration: pod.Generation,
			Reason:             reasonDeletionByTaintManager, Message: messageDeletionByTaintManager,
			LastTransitionTime: metav1.NewTime(c.clock.Now()),
		}) {
			if err := tx.Update(db.Pods, pod); err != nil {
				return err
			}
		}
		_, _, err = tx.DeleteGracefully(db.Pods, p.namespace, p.name, kube.DeletionGrace(pod, nil))
		return err
	})
}

// podRef is kube's reference to the pod in the controller's events: no
// uid.
func podRef(p podName) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: p.namespace, Name: p.name}
}
