package jobcontroller

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// queue is a work queue of keys: a key added several times before a worker
// takes it is processed once; a key is never processed by two workers at
// once (added while processing, it is processed again after Done); AddAfter
// delays an add by the clock.
//
// NOTE: the semantics of client-go's workqueue, in the few lines we need.
type queue[K comparable] struct {
	clock clock.Clock

	mu         sync.Mutex
	cond       *sync.Cond
	order      []K
	dirty      map[K]bool
	processing map[K]bool
	delayed    map[K]time.Time // earliest pending AddAfter per key
	failures   map[K]int
	shutdown   bool
	stop       chan struct{}
}

func newQueue[K comparable](clk clock.Clock) *queue[K] {
	q := &queue[K]{
		clock:      clk,
		dirty:      map[K]bool{},
		processing: map[K]bool{},
		delayed:    map[K]time.Time{},
		failures:   map[K]int{},
		stop:       make(chan struct{}),
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add queues k now.
func (q *queue[K]) Add(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(k)
}

func (q *queue[K]) addLocked(k K) {
	if q.shutdown || q.dirty[k] {
		return
	}
	q.dirty[k] = true
	if !q.processing[k] {
		q.order = append(q.order, k)
		q.cond.Signal()
	}
}

// AddAfter queues k once d has passed; an earlier pending AddAfter of k wins.
func (q *queue[K]) AddAfter(k K, d time.Duration) {
	if d <= 0 {
		q.Add(k)
		return
	}
	at := q.clock.Now().Add(d)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	if prev, ok := q.delayed[k]; ok && !prev.After(at) {
		return
	}
	q.delayed[k] = at
	t := q.clock.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			q.mu.Lock()
			if q.delayed[k].Equal(at) {
				delete(q.delayed, k)
				q.addLocked(k)
			}
			q.mu.Unlock()
		case <-q.stop:
			t.Stop()
		}
	}()
}

// Retry queues k again after an exponential delay (10ms doubling, at most a
// minute) that grows with each Retry until Forget.
func (q *queue[K]) Retry(k K) {
	q.mu.Lock()
	n := q.failures[k]
	q.failures[k] = n + 1
	q.mu.Unlock()
	d := 10 * time.Millisecond << min(n, 13)
	q.AddAfter(k, min(d, time.Minute))
}

// Forget resets the Retry delay of k.
func (q *queue[K]) Forget(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, k)
}

// Get blocks until a key is ready and marks it processing; ok is false once
// the queue is shut down.
func (q *queue[K]) Get() (k K, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.order) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if q.shutdown {
		return k, false
	}
	k, q.order = q.order[0], q.order[1:]
	delete(q.dirty, k)
	q.processing[k] = true
	return k, true
}

// Done marks k processed; if it was added meanwhile it is queued again.
func (q *queue[K]) Done(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, k)
	if q.dirty[k] {
		q.order = append(q.order, k)
		q.cond.Signal()
	}
}

// ShutDown wakes every Get with ok=false and drops delayed adds.
func (q *queue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	q.shutdown = true
	close(q.stop)
	q.cond.Broadcast()
}
