// Package endpointscontroller does what kube-controller-manager's endpoints
// and EndpointSlice controllers do: for every Service with a selector it
// keeps a core/v1 Endpoints object (named as the Service) and
// discovery.k8s.io/v1 EndpointSlices listing the pods the selector picks,
// with their readiness, hostnames and resolved ports. Those are what the
// service proxy, the cluster DNS and `kubectl describe service` read. It
// talks only to the store, and writes each Service's objects in one
// transaction.
//
// The loop (controller.go, watch.go, sync.go) is kept apart from the
// rules (pods.go, endpoints.go, slices.go), which are pure.
package endpointscontroller

import (
	"context"
	"errors"
	"sync"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"

	"github.com/skiff-sh/skiff/db"
)

// Config configures the controller.
type Config struct {
	Store   *db.Store
	Workers int // concurrent syncs of different Services, default 2
}

// Controller keeps Endpoints and EndpointSlices. Create it with New and
// start it with Run.
type Controller struct {
	cfg   Config
	store *db.Store
	queue workqueue.TypedRateLimitingInterface[serviceKey]

	mu sync.Mutex
	// selectors are the selectors of the Services with one, by namespace
	// and name: which Services a pod change concerns.
	selectors map[string]map[string]labels.Selector
	// pods are the pods last seen, by namespace and name.
	pods map[serviceKey]podState
}

// serviceKey names a Service (or a pod: same shape).
type serviceKey struct{ namespace, name string }

// New returns a controller; zero Config fields take their defaults.
func New(cfg Config) *Controller {
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	return &Controller{
		cfg:   cfg,
		store: cfg.Store,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[serviceKey](),
			workqueue.TypedRateLimitingQueueConfig[serviceKey]{Name: "endpoints"}),
		selectors: map[string]map[string]labels.Selector{},
		pods:      map[serviceKey]podState{},
	}
}

// Run lists and watches Services, Pods, Endpoints and EndpointSlices and
// syncs Services until ctx ends (nil) or a watch fails for good. It waits
// for all it started.
func (c *Controller) Run(ctx context.Context) error {
	log := logrus.WithField("controller", "endpoints")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type follow struct {
		r       db.Resource
		onList  func([]db.Object)
		onEvent func(db.Event)
	}
	follows := []follow{
		{db.Services, c.onServiceList, c.onServiceEvent},
		{db.Pods, c.onPodList, c.onPodEvent},
		{db.Endpoints, c.onOutputList, c.onOutputEvent},
		{db.EndpointSlices, c.onOutputList, c.onOutputEvent},
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(follows))
	for _, f := range follows {
		w, err := c.store.ListWatch(ctx, f.r, f.onList)
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.store.Consume(ctx, f.r, w, f.onList, f.onEvent); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	for i := 0; i < c.cfg.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.worker(ctx)
		}()
	}
	log.Info("endpoints controller started")
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	log.Info("endpoints controller stopped")
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func (c *Controller) worker(ctx context.Context) {
	for {
		k, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		err := c.sync(k)
		switch {
		case err == nil:
			c.queue.Forget(k)
		case ctx.Err() == nil && !errors.Is(err, db.ErrClosed):
			logrus.WithError(err).WithField("service", k.namespace+"/"+k.name).Error("syncing endpoints; retrying")
			c.queue.AddRateLimited(k)
		}
		c.queue.Done(k)
	}
}
