package controller

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/skiff-sh/skiff/db"
)

// Watch is a resource a Loop follows and what to do with its changes.
type Watch struct {
	Resource db.Resource
	// OnList, if set, is handed the first list whole, once, before any
	// event (for a controller that builds an index from it); without it
	// each listed object comes to OnEvent as Added.
	OnList func([]db.Object)
	// OnEvent is handed every change after the list, one at a time. The
	// objects are the handler's to keep, not to modify.
	OnEvent func(db.Event)
}

// Config configures a Loop; zero fields take their defaults.
type Config[K comparable] struct {
	// Name names the controller in logs ("job", "garbage collector").
	Name  string
	Store *db.Store
	// Watches are listed in this order before any event is handed on and
	// any worker starts.
	Watches []Watch
	// Sync reconciles one key; an error retries the key with back-off. Nil
	// means no workers: the Loop only follows its Watches.
	Sync func(ctx context.Context, key K) error
	// Workers is how many keys are synced at once, default 1.
	Workers int
	// RateLimiter is the retry delay of a key whose sync failed, default
	// DefaultRetryBase doubling per failure up to DefaultRetryMax.
	RateLimiter workqueue.TypedRateLimiter[K]
	// Clock runs AddAfter and retry delays; nil = real time.
	Clock clock.WithDelayedExecution
	// Tasks run beside the watches and workers until ctx ends (a server);
	// one returning an error stops the Loop.
	Tasks []func(ctx context.Context) error
}

// Loop is the skeleton a controller runs on (see the package doc). Create
// it with New, feed its queue from the Watch handlers with Add and
// AddAfter, start it with Run, once.
type Loop[K comparable] struct {
	cfg   Config[K]
	queue *queue[K]
	log   *logrus.Entry
}

// New returns a Loop. Its queue takes keys at once; they are synced once
// Run has listed every Watch.
func New[K comparable](cfg Config[K]) *Loop[K] {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.RateLimiter == nil {
		cfg.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[K](DefaultRetryBase, DefaultRetryMax)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Loop[K]{
		cfg:   cfg,
		queue: newQueue(cfg.Clock, cfg.RateLimiter),
		log:   logrus.WithField("controller", cfg.Name),
	}
}

// Add queues key for a sync.
func (l *Loop[K]) Add(key K) { l.queue.add(key) }

// AddAfter queues key for a sync once d has passed on the Loop's clock; of
// several pending AddAfters of one key the earliest wins.
func (l *Loop[K]) AddAfter(key K, d time.Duration) { l.queue.addAfter(key, d) }

// Run lists every Watch, then follows them, syncs queued keys and runs the
// Tasks until ctx ends. It returns once everything it started has ended:
// nil when ctx ended, or the error that stopped it (a list that failed, the
// store closed, a Task's error).
func (l *Loop[K]) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, ctx := errgroup.WithContext(ctx)
	defer l.queue.shutDown()

	watchers := make([]*db.Watcher, len(l.cfg.Watches))
	followers := make([]*follower, len(l.cfg.Watches))
	for i, w := range l.cfg.Watches {
		f := newFollower(l.cfg.Store, w, l.log)
		watcher, err := f.start(ctx)
		if err != nil {
			for _, started := range watchers[:i] {
				started.Stop()
			}
			if ctx.Err() != nil {
				return nil // ended while waiting for its turn to list
			}
			return err
		}
		watchers[i], followers[i] = watcher, f
	}
	for i, f := range followers {
		g.Go(func() error { return f.run(ctx, watchers[i]) })
	}
	if l.cfg.Sync != nil {
		for range l.cfg.Workers {
			g.Go(func() error { l.work(ctx); return nil })
		}
	}
	for _, task := range l.cfg.Tasks {
		g.Go(func() error { return task(ctx) })
	}
	l.log.Info("controller started")

	<-ctx.Done()
	l.queue.shutDown()
	err := g.Wait()
	l.log.Info("controller stopped")
	return err
}

// work syncs keys until the queue shuts down.
func (l *Loop[K]) work(ctx context.Context) {
	for {
		k, ok := l.queue.get()
		if !ok {
			return
		}
		if ctx.Err() != nil {
			l.queue.done(k) // shutting down: what is left is not synced
			return
		}
		err := l.cfg.Sync(ctx, k)
		if err != nil && ctx.Err() == nil && !errors.Is(err, db.ErrClosed) {
			l.log.WithError(err).WithField("key", k).Error("sync failed; retrying")
			l.queue.retry(k)
		} else {
			l.queue.forget(k)
		}
		l.queue.done(k)
	}
}
