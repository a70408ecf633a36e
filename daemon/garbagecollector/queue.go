package garbagecollector

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// workQueue is a FIFO of items in which an item waiting is queued only once.
type workQueue struct {
	clock clock.Clock
	mu    sync.Mutex
	items []item
	set   map[item]bool
	wake  chan struct{}
	stop  chan struct{}
	once  sync.Once
}

func newWorkQueue(clk clock.Clock) *workQueue {
	return &workQueue{clock: clk, set: map[item]bool{}, wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// shutdown drops pending delayed adds.
func (q *workQueue) shutdown() {
	q.once.Do(func() { close(q.stop) })
}

func (q *workQueue) add(it item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.set[it] {
		return
	}
	q.set[it] = true
	q.items = append(q.items, it)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// addAfter queues it once d has passed on the queue's clock, unless the
// queue is shut down first.
func (q *workQueue) addAfter(it item, d time.Duration) {
	if d <= 0 {
		q.add(it)
		return
	}
	t := q.clock.NewTimer(d)
	go func() {
		select {
		case <-t.C():
			q.add(it)
		case <-q.stop:
			t.Stop()
		}
	}()
}

// next blocks until an item is queued (ok) or ctx ends (not ok).
func (q *workQueue) next(ctx context.Context) (item, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			it := q.items[0]
			q.items = q.items[1:]
			delete(q.set, it)
			q.mu.Unlock()
			return it, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return item{}, false
		}
	}
}
