package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/db"
)

// follower keeps one Watch of a Loop going: it lists, watches from the
// list on, resumes a broken watch where it stopped, and turns a relist
// into the changes its handlers missed. Only its own goroutine touches it
// once the first list is done.
type follower struct {
	store *db.Store
	watch Watch
	log   *logrus.Entry
	// last is the resourceVersion up to which every change has been
	// delivered (or listed).
	last uint64
	// known is what was delivered of each object that exists: to tell
	// what a relist changed, and to stand in for an object gone meanwhile.
	known map[seenKey]lastSeen
}

type objectKey struct{ namespace, name string }

func newFollower(store *db.Store, w Watch, log *logrus.Entry) *follower {
	return &follower{store: store, watch: w, log: log.WithField("resource", w.Resource.Name), known: map[seenKey]lastSeen{}}
}

// firstLists lets one follower of the process take and deliver its first
// list at a time. NOTE: every controller lists everything when the daemon
// starts; side by side they held eight copies of a large store at once
// (a start onto 10000 Jobs and 10000 Pods peaked at 670 MiB resident, for
// 95 MB in use once done), one at a time they hold one.
var firstLists = make(chan struct{}, 1)

// NOTE: decoding the first lists of a large store leaves the heap's peak
// behind: the Go runtime gives freed pages back to the kernel only
// gradually (a start onto 20000 objects stayed at 400 MiB resident for
// 110 MB in use). Once no follower is taking or waiting for its first
// list, and they decoded at least returnAfterListing bytes of stored JSON,
// the freed memory goes back at once.
var (
	listing     atomic.Int64 // followers taking or waiting for their first list
	listedBytes atomic.Int64 // stored JSON they decoded since listing was last 0
)

const returnAfterListing = 32 << 20

// start lists the resource, hands the list to OnList (or each object to
// OnEvent as Added) and returns the watch that continues it.
func (f *follower) start(ctx context.Context) (*db.Watcher, error) {
	listing.Add(1)
	defer func() {
		if listing.Add(-1) == 0 && listedBytes.Load() >= returnAfterListing {
			listedBytes.Store(0)
			go debug.FreeOSMemory()
		}
	}()
	select {
	case firstLists <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-firstLists }()
	stored, rv, w, err := f.listWatch(ctx)
	if err != nil {
		return nil, err
	}
	f.last = rv
	for _, st := range stored {
		listedBytes.Add(int64(len(st.JSON)))
	}
	if f.watch.OnList == nil {
		// NOTE: one object decoded at a time: every controller lists
		// everything at start, and holding each list decoded at once made
		// a start onto 20000 objects peak at hundreds of MB.
		for _, st := range stored {
			obj, err := st.Decode(f.watch.Resource)
			if err != nil {
				w.Stop()
				return nil, fmt.Errorf("listing %s: %w", f.watch.Resource.Name, err)
			}
			f.deliver(db.Event{Type: watch.Added, Resource: f.watch.Resource.Name, Object: obj, RV: st.RV})
		}
		return w, nil
	}
	objs, err := f.decode(stored)
	if err != nil {
		w.Stop()
		return nil, err
	}
	for _, obj := range objs {
		f.remember(obj, resourceVersion(obj))
	}
	f.watch.OnList(objs)
	return w, nil
}

// decode decodes a list.
func (f *follower) decode(stored []db.Stored) ([]db.Object, error) {
	objs := make([]db.Object, len(stored))
	for i, st := range stored {
		obj, err := st.Decode(f.watch.Resource)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", f.watch.Resource.Name, err)
		}
		objs[i] = obj
	}
	return objs, nil
}

// listWatch lists every object of the resource, as stored, and starts a
// watch that continues exactly after the list.
func (f *follower) listWatch(ctx context.Context) ([]db.Stored, uint64, *db.Watcher, error) {
	r := f.watch.Resource
	objs, rv, err := f.store.ListStoredAt(r, "", nil, 0)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("listing %s: %w", r.Name, err)
	}
	if rv > 0 {
		w, err := f.store.Watch(ctx, r, rv)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("watching %s: %w", r.Name, err)
		}
		return objs, rv, w, nil
	}
	// NOTE: Watch takes since 0 for "from now": a store never written to is
	// watched first and listed again; what that list holds already, run
	// skips by resourceVersion.
	w, err := f.store.Watch(ctx, r, 0)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("watching %s: %w", r.Name, err)
	}
	if objs, rv, err = f.store.ListStoredAt(r, "", nil, 0); err != nil {
		w.Stop()
		return nil, 0, nil, fmt.Errorf("listing %s: %w", r.Name, err)
	}
	return objs, rv, w, nil
}

// run delivers w's events, and those of the watches that replace it when
// it breaks, until ctx ends (nil) or the store closes.
func (f *follower) run(ctx context.Context, w *db.Watcher) error {
	for {
		for ev := range w.Events() {
			if ev.RV > f.last {
				f.deliver(ev)
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		cause := w.Err()
		if errors.Is(cause, db.ErrClosed) {
			return fmt.Errorf("watching %s: %w", f.watch.Resource.Name, cause)
		}
		var err error
		if w, err = f.resume(ctx, cause); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// resume starts a watch after a broken one: from the last change delivered
// while the store's change log still holds what followed, else from a new
// list, turned into the changes since.
func (f *follower) resume(ctx context.Context, cause error) (*db.Watcher, error) {
	log := f.log.WithError(cause).WithField("resourceVersion", f.last)
	if f.last > 0 {
		w, err := f.store.Watch(ctx, f.watch.Resource, f.last)
		if err == nil {
			log.Warn("watch ended; resumed where it stopped")
			return w, nil
		}
		if !errors.Is(err, db.ErrExpired) {
			return nil, fmt.Errorf("watching %s: %w", f.watch.Resource.Name, err)
		}
	}
	log.Warn("watch ended past the change log's reach; relisting")
	for {
		w, err := f.relist(ctx)
		// A list whose resourceVersion was trimmed from the change log
		// before its watch started is taken again.
		if !errors.Is(err, db.ErrExpired) || ctx.Err() != nil {
			return w, err
		}
	}
}

// relist lists the resource again and delivers what changed since the last
// delivered state: Deleted for what is gone (first, in key order), then
// Added and Modified in the list's order. An object deleted and created
// again under its name shows as Deleted, then Added.
func (f *follower) relist(ctx context.Context) (*db.Watcher, error) {
	stored, rv, w, err := f.listWatch(ctx)
	if err != nil {
		return nil, err
	}
	objs, err := f.decode(stored)
	if err != nil {
		w.Stop()
		return nil, err
	}
	listed := make(map[seenKey]bool, len(objs))
	var gone, changed []db.Event
	for _, obj := range objs {
		k := seenKeyOf(obj)
		listed[k] = true
		objRV := resourceVersion(obj)
		prev, ok := f.known[k]
		switch {
		case !ok:
			changed = append(changed, f.event(watch.Added, obj, objRV))
		case prev.meta.Value().uid != obj.GetUID():
			gone = append(gone, f.event(watch.Deleted, f.tombstone(k, prev), rv))
			changed = append(changed, f.event(watch.Added, obj, objRV))
		case prev.rv != objRV:
			changed = append(changed, f.event(watch.Modified, obj, objRV))
		}
	}
	for k, prev := range f.known {
		if !listed[k] {
			gone = append(gone, f.event(watch.Deleted, f.tombstone(k, prev), rv))
		}
	}
	slices.SortFunc(gone, func(a, b db.Event) int {
		return compareKeys(keyOf(a.Object), keyOf(b.Object))
	})
	for _, ev := range append(gone, changed...) {
		f.deliver(ev)
	}
	f.last = rv
	return w, nil
}

func (f *follower) event(typ watch.EventType, obj db.Object, rv uint64) db.Event {
	return db.Event{Type: typ, Resource: f.watch.Resource.Name, Object: obj, RV: rv}
}

// tombstone stands in for an object deleted while the watch was down: its
// namespace, name, uid, labels and ownerReferences as last delivered.
func (f *follower) tombstone(k seenKey, prev lastSeen) db.Object {
	key, meta := k.Value(), prev.meta.Value()
	obj := f.watch.Resource.New()
	obj.SetNamespace(key.namespace)
	obj.SetName(key.name)
	obj.SetUID(meta.uid)
	obj.SetResourceVersion(strconv.FormatUint(prev.rv, 10))
	obj.SetLabels(decodeLabels(meta.labels))
	obj.SetOwnerReferences(decodeOwners(meta.owners))
	return obj
}

// deliver records ev and hands it to OnEvent.
func (f *follower) deliver(ev db.Event) {
	if ev.Type == watch.Deleted {
		delete(f.known, seenKeyOf(ev.Object))
	} else {
		f.remember(ev.Object, ev.RV)
	}
	f.last = max(f.last, ev.RV)
	f.watch.OnEvent(ev)
}

func (f *follower) remember(obj db.Object, rv uint64) {
	f.known[seenKeyOf(obj)] = seen(obj, rv)
}

func compareKeys(a, b objectKey) int {
	return cmp.Or(strings.Compare(a.namespace, b.namespace), strings.Compare(a.name, b.name))
}

// resourceVersion is a stored object's resourceVersion as a number.
func resourceVersion(obj db.Object) uint64 {
	rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
	return rv
}
