// Package jobcontroller is skiff's Job controller: it turns batch/v1 Jobs
// into Pods and the outcomes of those Pods into Job status, as the
// Kubernetes Job controller does. It talks only to the store: it watches
// Jobs and Pods, and writes Pods and Job status. Its pods go through the
// API's own pod create strategy (kube.PodStrategy), inside the transaction
// that counts them.
//
// The loop (controller.go, watch.go, sync.go), on package controller's
// skeleton, is kept apart from the policy (decide.go, manage.go,
// conditions.go, counting.go, backoff.go, removal.go, …), which is pure and
// tested without I/O.
package jobcontroller

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// Config configures the Job controller.
type Config struct {
	Store       *db.Store
	BackoffBase time.Duration // --pod-backoff-base, default 10s
	BackoffMax  time.Duration // --pod-backoff-max, default 10m (Kubernetes 1.34's MaxJobPodFailureBackOff)
	// Clock (k8s.io/utils/clock) tells the time and runs the timed syncs
	// (back-off, deadlines); nil = real.
	Clock    clock.WithDelayedExecution
	Workers  int      // concurrent syncs of different Jobs, default 4
	Recorder Recorder // the Job's Events; nil = none recorded
	// Pods is the pod create strategy the Job's pods go through, the API's
	// own (defaults, validation, node binding, namespace admission).
	Pods kube.PodStrategy
}

// Controller reconciles Jobs. Create it with New and start it with Run.
type Controller struct {
	cfg   Config
	store *db.Store
	clock clock.Clock
	index *podIndex
	adopt *adoptIndex
	loop  *controller.Loop[workKey]
}

// workKey is a unit of work: a Job to sync, or an orphan pod to release.
type workKey struct {
	orphanPod       bool
	namespace, name string
}

// New returns a Job controller; zero Config fields take their defaults.
func New(cfg Config) *Controller {
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = DefaultBackoffBase
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = DefaultBackoffMax
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	c := &Controller{
		cfg:   cfg,
		store: cfg.Store,
		clock: cfg.Clock,
		index: newPodIndex(),
		adopt: newAdoptIndex(),
	}
	c.loop = controller.New(controller.Config[workKey]{
		Name:  "job",
		Store: cfg.Store,
		// Pods first: the index the Job list's syncs read is built from them.
		Watches: []controller.Watch{
			{Resource: db.Pods, OnList: c.onPodList, OnEvent: c.onPodEvent},
			{Resource: db.Jobs, OnList: c.onJobList, OnEvent: c.onJobEvent},
		},
		Sync:    c.sync,
		Workers: cfg.Workers,
		Clock:   cfg.Clock,
	})
	return c
}

// Run lists Jobs and Pods, then watches them and syncs Jobs until ctx ends.
// It returns nil when ctx ends, or the error that stopped it (the store
// closed, or a List failed).
func (c *Controller) Run(ctx context.Context) error {
	return c.loop.Run(ctx)
}

// sync reconciles one unit of work.
func (c *Controller) sync(ctx context.Context, k workKey) error {
	if k.orphanPod {
		return c.syncOrphanPod(ctx, podName{k.namespace, k.name})
	}
	return c.syncJob(ctx, jobKey{k.namespace, k.name})
}

func (c *Controller) enqueueJob(k jobKey) {
	c.loop.Add(workKey{namespace: k.namespace, name: k.name})
}

func (c *Controller) enqueueOrphan(n podName) {
	c.loop.Add(workKey{orphanPod: true, namespace: n.namespace, name: n.name})
}
