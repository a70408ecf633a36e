package db

import (
	"context"
	"fmt"
	"sync"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/watch"
)

// Event is one committed change.
type Event struct {
	Type     watch.EventType // Added, Modified, Deleted
	Resource string          // Resource.Name
	Object   Object          // state after the change (for Deleted: the last state, with the deletion's resourceVersion)
	RV       uint64
}

// Watcher delivers events in resourceVersion order. Each event's Object is
// the receiver's own copy.
type Watcher struct {
	store    *Store
	resource string
	limit    int
	out      chan Event
	wake     chan struct{} // a push happened; capacity 1
	done     chan struct{} // closed by end

	mu    sync.Mutex
	queue []Event
	ended bool
	err   error

	last uint64 // resourceVersion last delivered (or the watch's start); only run touches it
}

// Watch streams every change to r (all namespaces; callers filter) with
// RV > since. since == 0 means "from now": changes committed after Watch
// returns. The change log is persisted in bbolt and retained for the last N
// changes (default 10000, see WithChangeLogSize, across restarts), so a watch
// can resume after a daemon restart; older since → ErrExpired.
// Delivery never blocks writers: each watcher has its own queue; a watcher
// whose queue passes the limit ends with ErrTooSlow.
//
// A since taken from Store.List (or Tx.rv of a Read) continues that list
// without a gap or a duplicate: the retained changes after since are replayed
// from bbolt, then live changes follow.
func (s *Store) Watch(ctx context.Context, r Resource, since uint64) (*Watcher, error) {
	w := &Watcher{
		store:    s,
		resource: r.Name,
		limit:    s.opts.watchQueueLimit,
		out:      make(chan Event),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	cur, err := s.register(w)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", r.Name, err)
	}
	if since == 0 {
		since = cur
	}
	// NOTE: since may be ahead of cur: a List snapshot can see a commit whose
	// OnCommit has not run yet. Its live event then arrives and is dropped here.
	w.last = since
	if since < cur {
		replay, err := s.replay(r, since, cur)
		if err != nil {
			w.Stop()
			return nil, err
		}
		w.prepend(replay)
	}
	go w.run(ctx)
	return w, nil
}

// register adds w to the watchers that publish feeds, and returns the
// resourceVersion from which on w receives every change.
func (s *Store) register(w *Watcher) (uint64, error) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.closed.Load() {
		return 0, ErrClosed
	}
	s.watchers[w] = struct{}{}
	return s.rv.Load(), nil
}

func (s *Store) unregister(w *Watcher) {
	s.watchMu.Lock()
	delete(s.watchers, w)
	s.watchMu.Unlock()
}

// replay reads r's logged changes in (since, until] from bbolt.
func (s *Store) replay(r Resource, since, until uint64) ([]Event, error) {
	var events []Event
	err := s.Read(func(tx *Tx) error {
		compacted := readU64(tx.btx.Bucket(bucketMeta).Get(keyCompacted))
		if since < compacted {
			return fmt.Errorf("watching %s from resourceVersion %d, oldest retained change is %d: %w",
				r.Name, since, compacted+1, ErrExpired)
		}
		c := tx.btx.Bucket(bucketChanges).Cursor()
		for k, v := c.Seek(u64(since + 1)); k != nil; k, v = c.Next() {
			rv := readU64(k)
			if rv > until {
				break
			}
			c, err := splitChangeValue(v)
			if err != nil {
				return fmt.Errorf("replaying change %d: %w", rv, err)
			}
			if c.resource != r.Name {
				continue
			}
			obj, err := decodeObject(r, rv, c.data)
			if err != nil {
				return fmt.Errorf("replaying change %d: %w", rv, err)
			}
			events = append(events, Event{Type: c.typ, Resource: c.resource, Object: obj, RV: rv})
		}
		return nil
	})
	return events, err
}

// publish hands committed events to every watcher; it runs from the commit,
// under writeMu, so events arrive in resourceVersion order.
func (s *Store) publish(rv uint64, events []Event) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	s.rv.Store(rv)
	s.wakeWaiters()
	for w := range s.watchers {
		if !w.push(events) {
			delete(s.watchers, w)
			w.end(ErrTooSlow)
			logrus.WithFields(logrus.Fields{"resource": w.resource, "limit": w.limit}).
				Warn("Ending a watch whose consumer fell behind")
		}
	}
}

// push queues w's share of events; false if the queue passed its limit.
func (w *Watcher) push(events []Event) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return true
	}
	n := len(w.queue)
	for _, ev := range events {
		if ev.Resource == w.resource {
			w.queue = append(w.queue, ev)
		}
	}
	if len(w.queue) == n {
		return true
	}
	if len(w.queue) > w.limit {
		return false
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return true
}

// prepend puts replayed events before anything queued live meanwhile.
func (w *Watcher) prepend(events []Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended && len(events) > 0 {
		w.queue = append(events, w.queue...)
	}
}

// end stops delivery for good; the first reason wins.
func (w *Watcher) end(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	w.ended, w.err, w.queue = true, err, nil
	close(w.done)
}

// run moves queued events to the Events channel until the watch ends.
func (w *Watcher) run(ctx context.Context) {
	defer close(w.out)
	for {
		ev, ok := w.next(ctx)
		if !ok {
			return
		}
		select {
		case w.out <- ev:
		case <-w.done:
			return
		case <-ctx.Done():
			w.Stop()
			return
		}
	}
}

// next waits for the next undelivered event, skipping any at or below the
// last delivered resourceVersion, and copies its object for the receiver.
func (w *Watcher) next(ctx context.Context) (Event, bool) {
	for {
		ev, ok, ended := w.pop()
		if ended {
			return Event{}, false
		}
		if ok {
			if ev.RV <= w.last {
				continue
			}
			w.last = ev.RV
			ev.Object = ev.Object.DeepCopyObject().(Object)
			return ev, true
		}
		select {
		case <-w.wake:
		case <-w.done:
			return Event{}, false
		case <-ctx.Done():
			w.Stop()
			return Event{}, false
		}
	}
}

func (w *Watcher) pop() (ev Event, ok, ended bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return Event{}, false, true
	}
	if len(w.queue) == 0 {
		return Event{}, false, false
	}
	ev = w.queue[0]
	w.queue[0] = Event{}
	w.queue = w.queue[1:]
	if len(w.queue) == 0 {
		w.queue = nil
	}
	return ev, true, false
}

// Events is closed when the watch ends (ctx done, Stop, store closed, or the
// consumer fell too far behind); Err then says why (nil for ctx/Stop).
func (w *Watcher) Events() <-chan Event { return w.out }

// Err says why the watch ended: nil for ctx/Stop (or while it runs),
// ErrClosed, or ErrTooSlow.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch; Events is closed soon after. Safe to call more than once.
func (w *Watcher) Stop() {
	w.store.unregister(w)
	w.end(nil)
}
