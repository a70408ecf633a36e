// Package endpointscontroller does what kube-controller-manager's endpoints
// and EndpointSlice controllers do: for every Service with a selector it
// keeps a core/v1 Endpoints object (named as the Service) and
// discovery.k8s.io/v1 EndpointSlices listing the pods the selector picks,
// with their readiness, hostnames and resolved ports. Those are what the
// service proxy, the cluster DNS and `kubectl describe service` read. It
// talks only to the store, and writes each Service's objects in one
// transaction.
//
// The loop (controller.go, watch.go, sync.go), on package controller's
// skeleton, is kept apart from the rules (pods.go, endpoints.go,
// slices.go), which are pure.
package endpointscontroller

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiff-sh/skiff/daemon/controller"
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
	loop  *controller.Loop[serviceKey]

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
	c := &Controller{
		cfg:       cfg,
		store:     cfg.Store,
		selectors: map[string]map[string]labels.Selector{},
		pods:      map[serviceKey]podState{},
	}
	c.loop = controller.New(controller.Config[serviceKey]{
		Name:  "endpoints",
		Store: cfg.Store,
		// Services first: a pod's event queues the Services that select it.
		Watches: []controller.Watch{
			{Resource: db.Services, OnEvent: c.onServiceEvent},
			{Resource: db.Pods, OnEvent: c.onPodEvent},
			{Resource: db.Endpoints, OnEvent: c.onOutputEvent},
			{Resource: db.EndpointSlices, OnEvent: c.onOutputEvent},
		},
		Sync:    func(_ context.Context, k serviceKey) error { return c.sync(k) },
		Workers: cfg.Workers,
	})
	return c
}

// Run lists and watches Services, Pods, Endpoints and EndpointSlices and
// syncs Services until ctx ends (nil) or a watch fails for good. It waits
// for all it started.
func (c *Controller) Run(ctx context.Context) error {
	return c.loop.Run(ctx)
}
