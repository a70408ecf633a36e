// Package jobcontroller is skiff's Job controller: it turns batch/v1 Jobs
// into Pods and the outcomes of those Pods into Job status, as the
// Kubernetes Job controller does. It talks only to the store: it watches
// Jobs and Pods, and writes Pods and Job status. Its pods go through the
// API's own pod create strategy (kube.PodStrategy), inside the transaction
// that counts them.
//
// The loop (controller.go, watch.go, sync.go) is kept apart from the policy
// (decide.go, manage.go, conditions.go, counting.go, backoff.go, removal.go,
// …), which is pure and tested without I/O.
package jobcontroller

import (
	"context"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// Config configures the Job controller.
type Config struct {
	Store       *db.Store
	BackoffBase time.Duration // --pod-backoff-base, default 10s
	BackoffMax  time.Duration // --pod-backoff-max, default 10m (Kubernetes 1.34's MaxJobPodFailureBackOff)
	Clock       clock.Clock   // k8s.io/utils/clock; nil = real
	Workers     int           // concurrent syncs of different Jobs, default 4
	Recorder    Recorder      // the Job's Events; nil = none recorded
	// Pods is the pod create strategy the Job's pods go through, the API's
	// own (defaults, validation, node binding, namespace admission).
	Pods kube.PodStrategy
	// Metrics are the controller's Prometheus metrics; nil = unregistered
	// ones.
	Metrics *Metrics
}

// Controller reconciles Jobs. Create it with New and start it with Run.
type Controller struct {
	cfg   Config
	store *db.Store
	clock clock.Clock
	index *podIndex
	adopt *adoptIndex
	queue *queue[workKey]
}

// workKey is a unit of work: a Job to sync, or an orphan pod to release.
type workKey struct {
	orphanPod       bool
	namespace, name string
}

// New returns a Job controller; zero Config fields take their defaults.
func New(cfg Config) *Controller {
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
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
	return &Controller{
		cfg:   cfg,
		store: cfg.Store,
		clock: cfg.Clock,
		index: newPodIndex(),
		adopt: newAdoptIndex(),
		queue: newQueue[workKey](cfg.Clock),
	}
}

// Run lists Jobs and Pods, then watches them and syncs Jobs until ctx ends.
// It returns nil when ctx ends, or the error that stopped it (the store
// closed, or a List failed).
func (c *Controller) Run(ctx context.Context) error {
	log := logrus.WithContext(ctx).WithField("controller", "job")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	podWatch, err := c.store.ListWatch(ctx, db.Pods, c.onPodList)
	if err != nil {
		return err
	}
	jobWatch, err := c.store.ListWatch(ctx, db.Jobs, c.onJobList)
	if err != nil {
		podWatch.Stop()
		return err
	}
	log.Info("job controller started")

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	watchLoop := func(r db.Resource, w *db.Watcher, onList func([]db.Object), onEvent func(db.Event)) {
		defer wg.Done()
		if err := c.store.Consume(ctx, r, w, onList, onEvent); err != nil {
			errs <- err
			cancel()
		}
	}
	wg.Add(2)
	go watchLoop(db.Pods, podWatch, c.onPodList, c.onPodEvent)
	go watchLoop(db.Jobs, jobWatch, c.onJobList, c.onJobEvent)
	for i := 0; i < c.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.worker(ctx)
		}()
	}

	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	log.Info("job controller stopped")
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func (c *Controller) worker(ctx context.Context) {
	for {
		k, ok := c.queue.Get()
		if !ok {
			return
		}
		var err error
		if k.orphanPod {
			err = c.syncOrphanPod(ctx, podName{k.namespace, k.name})
		} else {
			err = c.syncJob(ctx, jobKey{k.namespace, k.name})
		}
		if err != nil && ctx.Err() == nil {
			logrus.WithContext(ctx).WithError(err).Error("job controller sync failed; retrying")
			c.queue.Retry(k)
		} else {
			c.queue.Forget(k)
		}
		c.queue.Done(k)
	}
}

func (c *Controller) enqueueJob(k jobKey) {
	c.queue.Add(workKey{namespace: k.namespace, name: k.name})
}

func (c *Controller) enqueueOrphan(n podName) {
	c.queue.Add(workKey{orphanPod: true, namespace: n.namespace, name: n.name})
}
