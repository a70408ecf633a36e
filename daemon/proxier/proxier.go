// Package proxier is skiffd's kube-proxy: it follows the Services and
// EndpointSlices in the store and has package serviceproxy rewrite the
// node's Service rules after each change (changes close together are
// written in one sync), and again every resync period in case someone
// flushed them. It reads the store only.
package proxier

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/watch"

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
	// MinSyncPeriod is the least time between two syncs (kube-proxy's
	// --iptables-min-sync-period); Resync the most (its --iptables-sync-period).
	MinSyncPeriod, Resync time.Duration
}

// Proxier follows the store. Create it with New, start it with Run.
type Proxier struct {
	cfg   Config
	dirty chan struct{}

	mu       sync.Mutex
	services map[key]*corev1.Service
	slices   map[key]*discoveryv1.EndpointSlice // by slice name
}

type key struct{ namespace, name string }

// New returns a proxier; zero durations take their defaults.
func New(cfg Config) *Proxier {
	if cfg.MinSyncPeriod <= 0 {
		cfg.MinSyncPeriod = DefaultMinSyncPeriod
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	return &Proxier{cfg: cfg, dirty: make(chan struct{}, 1),
		services: map[key]*corev1.Service{}, slices: map[key]*discoveryv1.EndpointSlice{}}
}

// Run follows Services and EndpointSlices and syncs the rules until ctx
// ends (nil) or a watch fails for good. The first sync, right after the
// lists, replaces whatever rules an earlier skiffd left.
func (p *Proxier) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	follow := func(r db.Resource, onList func([]db.Object), onEvent func(db.Event)) error {
		w, err := p.cfg.Store.ListWatch(ctx, r, onList)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.cfg.Store.Consume(ctx, r, w, onList, onEvent); err != nil {
				errs <- err
				cancel()
			}
		}()
		return nil
	}
	if err := errors.Join(follow(db.Services, p.onServiceList, p.onServiceEvent),
		follow(db.EndpointSlices, p.onSliceList, p.onSliceEvent)); err != nil {
		cancel()
		wg.Wait()
		return err
	}
	p.loop(ctx)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// loop syncs when something changed (at most every MinSyncPeriod) and
// every Resync; a failed sync is retried after MinSyncPeriod.
func (p *Proxier) loop(ctx context.Context) {
	resync := time.NewTicker(p.cfg.Resync)
	defer resync.Stop()
	p.markDirty()
	for {
		select {
		case <-ctx.Done():
			return
		case <-resync.C:
		case <-p.dirty:
		}
		if err := p.cfg.Syncer.Sync(ctx, p.snapshot()); err != nil {
			if ctx.Err() != nil {
				return
			}
			logrus.WithError(err).Error("syncing service rules; retrying")
			p.markDirty()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.cfg.MinSyncPeriod):
		}
	}
}

func (p *Proxier) markDirty() {
	select {
	case p.dirty <- struct{}{}:
	default:
	}
}

func (p *Proxier) onServiceList(objs []db.Object) {
	p.mu.Lock()
	p.services = map[key]*corev1.Service{}
	for _, o := range objs {
		p.services[key{o.GetNamespace(), o.GetName()}] = o.(*corev1.Service)
	}
	p.mu.Unlock()
	p.markDirty()
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
	p.markDirty()
}

func (p *Proxier) onSliceList(objs []db.Object) {
	p.mu.Lock()
	p.slices = map[key]*discoveryv1.EndpointSlice{}
	for _, o := range objs {
		p.slices[key{o.GetNamespace(), o.GetName()}] = o.(*discoveryv1.EndpointSlice)
	}
	p.mu.Unlock()
	p.markDirty()
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
	p.markDirty()
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
	var out []serviceproxy.Service
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
