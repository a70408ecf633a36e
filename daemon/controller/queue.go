package controller

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Default retry back-off of a key whose sync failed: 10ms, doubling with
// each failure, at most a minute.
const (
	DefaultRetryBase = 10 * time.Millisecond
	DefaultRetryMax  = time.Minute
)

// queue is a Loop's work queue. Deduplication and "never two workers on one
// key" are client-go's workqueue; the per-key retry delay is client-go's
// rate limiter; delayed adds are armed here, on the injected clock, at the
// moment AddAfter is called.
//
// NOTE: client-go's delaying queue arms its timers on a goroutine of its own
// with a heartbeat ticker; on a fake clock a test could then step time
// before a delay is armed, and the clock always has a waiter. Arming
// synchronously keeps a fake clock's HasWaiters true exactly while a delayed
// add is pending.
type queue[K comparable] struct {
	clock   clock.WithDelayedExecution
	keys    workqueue.TypedInterface[K]
	limiter workqueue.TypedRateLimiter[K]

	mu      sync.Mutex
	delayed map[K]delayedAdd
	stopped bool
}

// delayedAdd is a pending AddAfter of a key: when it is due and its timer.
type delayedAdd struct {
	at    time.Time
	timer clock.Timer // nil until armed
}

func newQueue[K comparable](clk clock.WithDelayedExecution, limiter workqueue.TypedRateLimiter[K]) *queue[K] {
	return &queue[K]{
		clock:   clk,
		keys:    workqueue.NewTyped[K](),
		limiter: limiter,
		delayed: map[K]delayedAdd{},
	}
}

// add queues k now.
func (q *queue[K]) add(k K) { q.keys.Add(k) }

// addAfter queues k once d has passed; of several pending AddAfters of one
// key the earliest wins.
func (q *queue[K]) addAfter(k K, d time.Duration) {
	if d <= 0 {
		q.add(k)
		return
	}
	at := q.clock.Now().Add(d)
	q.mu.Lock()
	prev, pending := q.delayed[k]
	if q.stopped || (pending && !prev.at.After(at)) {
		q.mu.Unlock()
		return
	}
	q.delayed[k] = delayedAdd{at: at}
	q.mu.Unlock()
	// NOTE: the clock is called with q.mu released: a fake clock runs due
	// callbacks (fire, which takes q.mu) under its own lock.
	if pending && prev.timer != nil {
		prev.timer.Stop()
	}
	t := q.clock.AfterFunc(d, func() { q.fire(k, at) })
	q.mu.Lock()
	cur, ok := q.delayed[k]
	armed := ok && cur.at.Equal(at)
	if armed {
		cur.timer = t
		q.delayed[k] = cur
	}
	q.mu.Unlock()
	if !armed {
		t.Stop() // fired already, replaced by an earlier add, or shut down
	}
}

// fire queues k if the delayed add due at `at` is still the pending one.
func (q *queue[K]) fire(k K, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if cur, ok := q.delayed[k]; ok && cur.at.Equal(at) && !q.stopped {
		delete(q.delayed, k)
		q.keys.Add(k)
	}
}

// retry queues k again after its rate limiter's delay, which grows with
// each retry until forget.
func (q *queue[K]) retry(k K) { q.addAfter(k, q.limiter.When(k)) }

// forget resets k's retry delay.
func (q *queue[K]) forget(k K) { q.limiter.Forget(k) }

// get blocks until a key is ready and marks it processing; ok is false once
// the queue is shut down and empty.
func (q *queue[K]) get() (k K, ok bool) {
	k, shutdown := q.keys.Get()
	return k, !shutdown
}

// done marks k processed; if it was added meanwhile it is queued again.
func (q *queue[K]) done(k K) { q.keys.Done(k) }

// shutDown wakes every get and drops the pending delayed adds.
func (q *queue[K]) shutDown() {
	q.mu.Lock()
	q.stopped = true
	pending := q.delayed
	q.delayed = map[K]delayedAdd{}
	q.mu.Unlock()
	for _, d := range pending {
		if d.timer != nil {
			d.timer.Stop()
		}
	}
	q.keys.ShutDown()
}
