// Package podgc is the orphan half of kube-controller-manager's pod
// garbage collector: a pod bound to a Node that no longer exists — still
// missing after a quarantine, in case it comes back — is marked Failed
// with the DisruptionTarget condition (DeletionByPodGC "PodGC: node no
// longer exists") and deleted at once, since no kubelet will ever finish
// it. It talks only to the store, and runs on package controller's
// skeleton.
//
// Only pods bound to other nodes than skiffd's are followed: skiffd's own
// node is registered again within a lease renewal when a client deletes
// it, well inside the quarantine, so its pods are never orphans.
package podgc

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// DefaultQuarantine is how long kube's pod GC waits for a missing node to
// show up before it deletes the node's pods.
const DefaultQuarantine = 40 * time.Second

// Config configures the collector.
type Config struct {
	Store *db.Store
	// NodeName is skiffd's own node, whose pods are not followed.
	NodeName string
	// Quarantine is how long a node must stay missing; 0 = DefaultQuarantine.
	Quarantine time.Duration
	// Clock tells the time and runs the quarantine; nil = real.
	Clock clock.WithDelayedExecution
}

// Controller deletes the pods of missing nodes. Create it with New, start
// it with Run.
type Controller struct {
	store      *db.Store
	own        string
	quarantine time.Duration
	clock      clock.Clock
	loop       *controller.Loop[string] // keys: node names

	mu   sync.Mutex
	pods map[string]map[podName]bool // node → the pods bound to it (other nodes than skiffd's)
}

type podName struct{ namespace, name string }

// New returns a pod garbage collector; zero Config fields take their
// defaults.
func New(cfg Config) *Controller {
	if cfg.Quarantine <= 0 {
		cfg.Quarantine = DefaultQuarantine
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &Controller{store: cfg.Store, own: cfg.NodeName, quarantine: cfg.Quarantine, clock: cfg.Clock,
		pods: map[string]map[podName]bool{}}
	c.loop = controller.New(controller.Config[string]{
		Name:  "pod garbage collector",
		Store: cfg.Store,
		Watches: []controller.Watch{
			{Resource: db.Nodes, OnEvent: c.onNodeEvent},
			{Resource: db.Pods, OnEvent: c.onPodEvent},
		},
		Sync:  c.sync,
		Clock: cfg.Clock,
	})
	return c
}

// Run follows nodes and pods and collects orphans until ctx ends (nil) or
// the store closes.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// onNodeEvent queues a deleted node that pods are bound to, for after the
// quarantine.
func (c *Controller) onNodeEvent(ev db.Event) {
	if ev.Type != watch.Deleted {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pods[ev.Object.GetName()]) > 0 {
		c.loop.AddAfter(ev.Object.GetName(), c.quarantine)
	}
}

// onPodEvent keeps the index of pods bound to other nodes, and queues
// their node for a look after the quarantine.
func (c *Controller) onPodEvent(ev db.Event) {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	node := pod.Spec.NodeName
	if node == "" || node == c.own {
		return
	}
	p := podName{pod.Namespace, pod.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Type == watch.Deleted {
		delete(c.pods[node], p)
		if len(c.pods[node]) == 0 {
			delete(c.pods, node)
		}
		return
	}
	if c.pods[node] == nil {
		c.pods[node] = map[podName]bool{}
	}
	if !c.pods[node][p] {
		c.pods[node][p] = true
		c.loop.AddAfter(node, c.quarantine)
	}
}

// sync deletes the pods bound to the node if it is still missing: the
// quarantine has passed since it was found missing.
func (c *Controller) sync(_ context.Context, node string) error {
	c.mu.Lock()
	var pods []podName
	for p := range c.pods[node] {
		pods = append(pods, p)
	}
	c.mu.Unlock()
	for _, p := range pods {
		if err := c.collect(node, p); err != nil {
			return err
		}
	}
	return nil
}

// collect marks the pod Failed and deletes it at once, in one transaction
// that finds its node missing (kube's markFailedAndDeletePodWithCondition).
func (c *Controller) collect(node string, p podName) error {
	return c.store.Write(func(tx *db.Tx) error {
		if _, err := tx.Get(db.Nodes, "", node); err == nil || !errors.Is(err, db.ErrNotFound) {
			return err // the node exists (again)
		}
		obj, err := tx.Get(db.Pods, p.namespace, p.name)
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		pod := obj.(*corev1.Pod)
		if pod.Spec.NodeName != node {
			return nil
		}
		logrus.WithFields(logrus.Fields{"pod": p.namespace + "/" + p.name, "node": node}).Info("deleting a pod of a node that no longer exists")
		if !kube.IsPodTerminal(pod) {
			pod.Status.Phase = corev1.PodFailed
			// NOTE: PodObservedGenerationTracking is on in v1.34.
			pod.Status.ObservedGeneration = pod.Generation
			kube.SetPodCondition(&pod.Status, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, ObservedGeneration: pod.Generation,
				Reason: "DeletionByPodGC", Message: "PodGC: node no longer exists",
				LastTransitionTime: metav1.NewTime(c.clock.Now()),
			})
			if err := tx.Update(db.Pods, pod); err != nil {
				return err
			}
		}
		_, _, err = tx.DeleteGracefully(db.Pods, p.namespace, p.name, 0)
		return err
	})
}
