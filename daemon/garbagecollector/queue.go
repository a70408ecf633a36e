package garbagecollector

import (
	"context"
	"sync"
	"time"
)

// workQueue is a FIFO of items in which an item waiting is queued only once.
type workQueue struct {
	mu    sync.Mutex
	items []item
	set   map[item]bool
	wake  chan struct{}
}

func newWorkQueue() *workQueue {
	return &workQueue{set: map[item]bool{}, wake: make(chan struct{}, 1)}
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

// addAfter queues it once d has passed.
func (q *workQueue) addAfter(it item, d time.Duration) {
	time.AfterFunc(d, func() { q.add(it) })
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
