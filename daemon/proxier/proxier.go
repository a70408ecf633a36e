// Package proxier is skiffd's kube-proxy: it follows the Services and
// EndpointSlices in the store and has package serviceproxy rewrite the
// node's Service rules after each change (changes close together are
// written in one sync), and again every resync period in case someone
// flushed them. It reads the store only, and runs on package controller's
// skeleton: its queue holds one key, all the rules.
package proxier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/serviceproxy"
)

// Syncer is what writes the rules (serviceproxy.Proxier).
type Syncer interface {
	Sync(ctx context.Context, services []serviceproxy.Service) error
}

var _ Syncer = (*serviceproxy.Proxier)(nil)

// Defaults of Config.
const (
	DefaultMinSyncPeriod = 100 * time.Millisecond
	DefaultResync        = 30 * time.Second
)

// Config configures the proxier.
type Config struct {
	Store  *db.Store
	Syncer Syncer
	// Own are portals of skiffd's own, written beside the Services' (the
	// cluster DNS's redirect, when it serves on another port).
	Own []serviceproxy.Service
	// MinSyncPeriod is the least time between two syncs (kube-proxy's
	// --iptables-min-sync-period); Resync the most (its --iptables-sync-period).
	MinSyncPeriod, Resync time.Duration
}

// Proxier follows the store. Create it with New, start it with Run.
type Proxier struct {
	cfg  Config
	loop *controller.Loop[allRules]

	mu       sync.Mutex
	services map[key]*corev1.Service
	slices   map[key]*discoveryv1.EndpointSlice // by slice name
}

type key struct{ namespace, name string }

// allRules is the one key of the proxier's queue: a sync writes every rule.
type allRules struct{}

// New returns a proxier; zero durations take their defaults.
func New(cfg Config) *Proxier {
	if cfg.MinSyncPeriod <= 0 {
		cfg.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	p := &Proxier{cfg: cfg, services: map[key]*corev1.Service{}, slices: map[key]*discoveryv1.EndpointSlice{}}
	p.loop = controller.New(controller.Config[allRules]{
		Name:  "service proxy",
		Store: cfg.Store,
		Watches: []controller.Watch{
			{Resource: db.Services, OnEvent: p.onServiceEvent},
			{Resource: db.EndpointSlices, OnEvent: p.onSliceEvent},
		},
		Sync: p.sync,
	})
	// The first sync, right after the lists, replaces whatever rules an
	// earlier skiffd left, even with no Service to serve.
	p.loop.Add(allRules{})
	return p
}

// Run follows Services and EndpointSlices and syncs the rules until ctx
// ends (nil) or a watch fails for good.
func (p *Proxier) Run(ctx context.Context) error {
	return p.loop.Run(ctx)
}

// sync writes the rules, then holds the queue's one key for MinSyncPeriod,
// so that the changes made meanwhile are written together by the next
// sync. Every Resync it comes again, in case someone flushed the rules; a
// failed sync is retried with back-off.
func (p *Proxier) sync(ctx context.Context, _ allRules) error {
	p.loop.AddAfter(allRules{}, p.cfg.Resync) // the earliest pending one stays
	err := p.cfg.Syncer.Sync(ctx, p.snapshot())
	select {
	case <-ctx.Done():
	case <-time.After(p.cfg.MinSyncPeriod):
	}
	if errors.Is(err, serviceproxy.ErrConntrack) {
		logrus.WithError(err).Warn("service rules written; UDP flows to endpoints that went may linger")
		return nil
	}
	if err != nil {
		return fmt.Errorf("syncing service rules: %w", err)
	}
	return nil
}

func (p *Proxier) onServiceEvent(ev db.Event) {
	p.mu.Lock()
	k := key{ev.Object.GetNamespace(), ev.Object.GetName()}
	if ev.Type == watch.Deleted {
		delete(p.services, k)
	} else {
		p.services[k] = ev.Object.(*corev1.Service)
	}
	p.mu.Unlock()
	p.loop.Add(allRules{})
}

func (p *Proxier) onSliceEvent(ev db.Event) {
	p.mu.Lock()
	k := key{ev.Object.GetNamespace(), ev.Object.GetName()}
	if ev.Type == watch.Deleted {
		delete(p.slices, k)
	} else {
		p.slices[k] = ev.Object.(*discoveryv1.EndpointSlice)
	}
	p.mu.Unlock()
	p.loop.Add(allRules{})
}

// snapshot is the Services the rules must serve now.
func (p *Proxier) snapshot() []serviceproxy.Service {
	p.mu.Lock()
	defer p.mu.Unlock()
	bySvc := map[key][]*discoveryv1.EndpointSlice{}
	for _, s := range p.slices {
		if name, ok := s.Labels[discoveryv1.LabelServiceName]; ok && s.AddressType == discoveryv1.AddressTypeIPv4 {
			k := key{s.Namespace, name}
			bySvc[k] = append(bySvc[k], s)
		}
	}
	out := slices.Clone(p.cfg.Own)
	for k, svc := range p.services {
		if ps, ok := proxiedService(svc, bySvc[k]); ok {
			out = append(out, ps)
		}
	}
	slices.SortFunc(out, func(a, b serviceproxy.Service) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out
}
