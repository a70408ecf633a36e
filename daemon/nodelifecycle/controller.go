// Package nodelifecycle is the part of kube-controller-manager's node
// lifecycle controller that a single node needs for the Nodes clients
// create: a Node with no kubelet behind it is marked as kube marks a node
// whose kubelet went silent. Once neither its Ready condition's heartbeat
// nor its Lease in kube-node-lease has moved for the grace period
// (--node-monitor-grace-period, 50 s as in v1.34), its Ready,
// MemoryPressure, DiskPressure and PIDPressure conditions become Unknown
// (NodeStatusUnknown "Kubelet stopped posting node status.", or
// NodeStatusNeverUpdated "Kubelet never posted node status." for a
// condition it never had), and it is tainted node.kubernetes.io/unreachable
// with effects NoSchedule and NoExecute; a node whose Ready is False is
// tainted node.kubernetes.io/not-ready instead, and one Ready again loses
// both. The NoExecute taint is what becomes of pods bound to such a node:
// package tainteviction evicts those that do not tolerate it (at once, or
// after their tolerationSeconds). They never ran — skiffd runs pods on its
// own node only — so there is no Ready condition of theirs to turn False.
//
// skiffd's own node is left out: its kubelet is skiffd itself, which
// renews its lease while it runs. Zones, eviction rate limits and the
// disruption modes of kube's controller have no meaning on one node and
// are not done. As in kube, the health timestamps live in memory: after a
// restart each node's grace period starts again.
package nodelifecycle

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
)

// DefaultGracePeriod is kube-controller-manager's
// --node-monitor-grace-period in v1.34.
const DefaultGracePeriod = 50 * time.Second

// Config configures the controller.
type Config struct {
	Store *db.Store
	// NodeName is skiffd's own node, which the controller leaves alone.
	NodeName string
	// GracePeriod is how long a node's heartbeat may stand still before it
	// is marked unreachable; 0 = DefaultGracePeriod.
	GracePeriod time.Duration
	// Clock tells the time and runs the timers; nil = real.
	Clock clock.WithDelayedExecution
}

// Controller watches the health of the Nodes clients created. Create it
// with New, start it with Run.
type Controller struct {
	store *db.Store
	own   string
	grace time.Duration
	clock clock.Clock
	loop  *controller.Loop[string] // keys: node names

	mu     sync.Mutex // health: the two watches' handlers and the sync share it
	health map[string]*health
}

// health is what the controller last saw of a node's heartbeats: the Ready
// condition's lastHeartbeatTime and the lease's renewTime, and when either
// last moved (probed).
type health struct {
	heartbeat metav1.Time
	renewed   metav1.MicroTime
	probed    time.Time
}

// New returns a node lifecycle controller; zero Config fields take their
// defaults.
func New(cfg Config) *Controller {
	if cfg.GracePeriod <= 0 {
		cfg.GracePeriod = DefaultGracePeriod
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &Controller{store: cfg.Store, own: cfg.NodeName, grace: cfg.GracePeriod, clock: cfg.Clock, health: map[string]*health{}}
	c.loop = controller.New(controller.Config[string]{
		Name:  "node lifecycle",
		Store: cfg.Store,
		Watches: []controller.Watch{
			{Resource: db.Nodes, OnEvent: c.onNodeEvent},
			{Resource: db.Leases, OnEvent: c.onLeaseEvent},
		},
		Sync:  c.sync,
		Clock: cfg.Clock,
	})
	return c
}

// Run watches nodes and their leases until ctx ends (nil) or the store
// closes.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// onNodeEvent notes a Ready heartbeat that moved (or a node first seen)
// and queues the node.
func (c *Controller) onNodeEvent(ev db.Event) {
	name := ev.Object.GetName()
	if name == c.own {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Type == watch.Deleted {
		delete(c.health, name)
		return
	}
	var beat metav1.Time
	if ready := readyCondition(ev.Object.(*corev1.Node)); ready != nil {
		beat = ready.LastHeartbeatTime
	}
	h := c.health[name]
	if h == nil {
		h = &health{}
		c.health[name] = h
	}
	if h.probed.IsZero() || !h.heartbeat.Equal(&beat) {
		h.heartbeat, h.probed = beat, c.clock.Now()
	}
	c.loop.Add(name)
}

// onLeaseEvent notes a node lease renewed and queues its node.
func (c *Controller) onLeaseEvent(ev db.Event) {
	lease, ok := ev.Object.(*coordinationv1.Lease)
	if !ok || ev.Type == watch.Deleted || lease.Namespace != corev1.NamespaceNodeLease || lease.Name == c.own || lease.Spec.RenewTime == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.health[lease.Name]
	if h == nil {
		return // not a node (yet): its node's first event starts the clock
	}
	if h.renewed.Before(lease.Spec.RenewTime) {
		h.renewed, h.probed = *lease.Spec.RenewTime, c.clock.Now()
		c.loop.Add(lease.Name)
	}
}

// sync marks the node unknown once its heartbeats are older than the grace
// period, keeps its taints in line with its Ready condition, and looks
// again when the grace period would end.
// A heartbeat seen after the probe time was read queues the node again.
func (c *Controller) sync(_ context.Context, name string) error {
	probed, ok := c.probed(name)
	if !ok {
		return nil
	}
	now := c.clock.Now()
	stale := !now.Before(probed.Add(c.grace))
	err := c.store.Write(func(tx *db.Tx) error {
		obj, err := tx.Get(db.Nodes, "", name)
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		node := obj.(*corev1.Node)
		before := node.DeepCopy()
		if stale {
			markUnknown(node, metav1.NewTime(now))
		}
		node.Spec.Taints = healthTaints(node.Spec.Taints, readyCondition(node), metav1.NewTime(now))
		if equality.Semantic.DeepEqual(before, node) {
			return nil
		}
		if old := readyCondition(before); stale && (old == nil || old.Status != corev1.ConditionUnknown) {
			logrus.WithField("node", name).Info("node stopped posting its status: marked Unknown and unreachable")
		}
		return tx.Update(db.Nodes, node)
	})
	if err != nil {
		return err
	}
	if !stale {
		c.loop.AddAfter(name, probed.Add(c.grace).Sub(now))
	}
	return nil
}

// probed is when the node's heartbeat last moved, as the handlers saw it.
func (c *Controller) probed(name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.health[name]
	if !ok {
		return time.Time{}, false
	}
	return h.probed, true
}

func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
