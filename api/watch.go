package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/db"
)

// bookmarkInterval is how often a watch that allows bookmarks gets one.
// NOTE: kube-apiserver sends them about once a minute.
var bookmarkInterval = time.Minute

// eventWriter writes watch events as JSON lines, flushing each.
type eventWriter struct {
	w     http.ResponseWriter
	r     *http.Request
	rs    *resource
	table string // Table version, "" for plain objects
	enc   *json.Encoder
}

// send writes one event.
func (ew *eventWriter) send(typ watch.EventType, obj runtime.Object) error {
	if o, ok := obj.(db.Object); ok && typ != watch.Error {
		if ew.table != "" {
			obj = ew.rs.table(ew.r, ew.table, []db.Object{o}, metav1.ListMeta{ResourceVersion: o.GetResourceVersion()})
		} else {
			ew.rs.setTypeMeta(o)
		}
	}
	if err := ew.enc.Encode(metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Object: obj}}); err != nil {
		return err
	}
	if f, ok := ew.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// bookmark writes a BOOKMARK event: an empty object of the kind carrying
// only the resourceVersion the watch has reached, and the given annotations
// set to "true".
func (ew *eventWriter) bookmark(rv uint64, annotations ...string) error {
	var obj runtime.Object
	if ew.table != "" {
		obj = &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/" + ew.table, Kind: "Table"},
			ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(rv, 10)}}
	} else {
		o := ew.rs.store.New()
		ew.rs.setTypeMeta(o)
		o.SetResourceVersion(strconv.FormatUint(rv, 10))
		if len(annotations) > 0 {
			m := map[string]string{}
			for _, a := range annotations {
				m[a] = "true"
			}
			o.SetAnnotations(m)
		}
		obj = o
	}
	if err := ew.enc.Encode(metav1.WatchEvent{Type: string(watch.Bookmark), Object: runtime.RawExtension{Object: obj}}); err != nil {
		return err
	}
	if f, ok := ew.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}

// watch streams the changes of rs in namespace ns ("" = all) as kube's
// watch does: from resourceVersion N the changes after N; from ""/"0" the
// current objects as ADDED first. Selectors filter, with ADDED/DELETED
// for objects entering or leaving them.
func (s *server) watch(w http.ResponseWriter, r *http.Request, rs *resource, ns string, opts listOptions) {
	ctx := r.Context()
	if opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.timeout)
		defer cancel()
	}
	since, _ := parseRV(opts.rv)
	if opts.sendInitial {
		since = 0
	}
	initial, seen, since, err := s.watchStart(rs, ns, opts, since)
	if err != nil {
		writeError(w, r, statusFor(err, rs.groupResource(), ""))
		return
	}
	ew := &eventWriter{w: w, r: r, rs: rs, enc: json.NewEncoder(w)}
	ew.table, _ = wantsTable(r)
	watcher, err := s.store.Watch(ctx, rs.store, since)
	if err != nil && !errors.Is(err, db.ErrExpired) {
		writeError(w, r, statusFor(err, rs.groupResource(), ""))
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	w.WriteHeader(http.StatusOK)
	if err != nil {
		// NOTE: kube reports a too old resourceVersion as an ERROR event
		// (410 Expired) in a 200 stream; clients relist on it.
		st := statusFor(err, rs.groupResource(), "").ErrStatus
		st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
		_ = ew.send(watch.Error, &st)
		return
	}
	defer watcher.Stop()
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	for _, obj := range initial {
		if ew.send(watch.Added, obj) != nil {
			return
		}
	}
	if opts.sendInitial && opts.bookmarks && ew.bookmark(since, metav1.InitialEventsAnnotationKey) != nil {
		return
	}
	s.streamEvents(ctx, ew, watcher, ns, opts, seen, since)
}

// watchStart prepares a watch: for resourceVersion ""/"0" the current
// matching objects (sent as ADDED) and the list's resourceVersion to watch
// from; with selectors, the set of keys now matching, to tell an object
// leaving the selection (DELETED) from one entering it (ADDED).
func (s *server) watchStart(rs *resource, ns string, opts listOptions, since uint64) ([]db.Object, map[string]bool, uint64, error) {
	selective := !opts.label.Empty() || !opts.field.Empty()
	if since != 0 && !selective {
		return nil, nil, since, nil
	}
	items, rv, err := s.store.List(rs.store, ns, opts.label)
	if err != nil {
		return nil, nil, 0, err
	}
	items = filterFields(rs, items, opts.field)
	var seen map[string]bool
	if selective {
		seen = make(map[string]bool, len(items))
		for _, it := range items {
			seen[objectKey(it)] = true
		}
	}
	if since != 0 {
		return nil, seen, since, nil
	}
	return items, seen, rv, nil
}

// streamEvents forwards the watcher's events until the watch ends.
func (s *server) streamEvents(ctx context.Context, ew *eventWriter, watcher *db.Watcher, ns string,
	opts listOptions, seen map[string]bool, rv uint64) {
	var tick <-chan time.Time
	if opts.bookmarks {
		t := time.NewTicker(bookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			if opts.bookmarks {
				_ = ew.bookmark(rv)
			}
			return
		case <-tick:
			if ew.bookmark(rv) != nil {
				return
			}
		case ev, ok := <-watcher.Events():
			if !ok {
				if err := watcher.Err(); err != nil {
					st := statusFor(err, ew.rs.groupResource(), "").ErrStatus
					st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
					_ = ew.send(watch.Error, &st)
				}
				return
			}
			rv = ev.RV
			if ns != "" && ev.Object.GetNamespace() != ns {
				continue
			}
			typ := eventType(ew.rs, ev, opts, seen)
			if typ != "" && ew.send(typ, ev.Object) != nil {
				return
			}
		}
	}
}

// eventType is the type under which ev is sent to a watch with opts, ""
// for none. seen (nil without selectors) tracks the selected objects.
func eventType(rs *resource, ev db.Event, opts listOptions, seen map[string]bool) watch.EventType {
	if seen == nil {
		return ev.Type
	}
	key := objectKey(ev.Object)
	was, is := seen[key], ev.Type != watch.Deleted && opts.matches(rs, ev.Object)
	switch {
	case is:
		seen[key] = true
		if was {
			return watch.Modified
		}
		return watch.Added
	case was:
		delete(seen, key)
		return watch.Deleted
	}
	return ""
}
