package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/db"
)

// bookmarkInterval is how often a watch that allows bookmarks gets one.
// NOTE: kube-apiserver sends them about once a minute.
var bookmarkInterval = time.Minute

// minRequestTimeout is kube-apiserver's --min-request-timeout default: the
// shortest time a watch without timeoutSeconds stays open. A variable so
// tests can shorten it.
var minRequestTimeout = 1800 * time.Second

// watchTimeout is how long a watch stays open: timeoutSeconds when set and
// not 0, else a random time between minRequestTimeout and twice it.
// NOTE: kube-apiserver spreads the end of watches that way
// (MinRequestTimeout * (1+rand)) so clients do not all reconnect at once;
// timeoutSeconds=0 counts as unset there too.
func watchTimeout(timeoutSeconds *int64) time.Duration {
	if timeoutSeconds != nil && *timeoutSeconds != 0 {
		return time.Duration(*timeoutSeconds) * time.Second
	}
	return time.Duration(float64(minRequestTimeout) * (1 + rand.Float64()))
}

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

// sendStatus writes an ERROR event carrying err's Status.
func (ew *eventWriter) sendStatus(err *apierrors.StatusError) error {
	st := err.ErrStatus
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	return ew.send(watch.Error, &st)
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
// watch does. With sendInitialEvents (the default for resourceVersion ""
// and "0") the current matching objects come first as ADDED, then, if
// bookmarks are allowed, a BOOKMARK marking the end of them; then the
// changes after that state. From resourceVersion N: the changes after N, or
// one ERROR event (410 Expired) when N is older than the retained change
// log. Selectors filter, with ADDED/DELETED for objects entering or leaving
// them.
func (s *server) watch(w http.ResponseWriter, r *http.Request, rs *resource, ns string, opts listOptions) {
	ctx, cancel := context.WithTimeout(r.Context(), watchTimeout(opts.TimeoutSeconds))
	defer cancel()
	start, err := s.watchStart(ctx, rs, ns, opts)
	if err != nil {
		writeError(w, r, statusFor(err, rs.groupResource(), ""))
		return
	}
	ew := &eventWriter{w: w, r: r, rs: rs, enc: json.NewEncoder(w)}
	ew.table, _ = wantsTable(r)
	watcher, err := s.store.Watch(ctx, rs.store, start.since)
	if err != nil && !errors.Is(err, db.ErrExpired) {
		writeError(w, r, statusFor(err, rs.groupResource(), ""))
		return
	}
	w.Header().Set("Content-Type", mediaJSON)
	w.WriteHeader(http.StatusOK)
	if err != nil {
		// NOTE: kube reports a too old resourceVersion as an ERROR event
		// (410 Expired) in a 200 stream; clients relist on it.
		_ = ew.sendStatus(s.tooOldResourceVersion(start.since))
		return
	}
	defer watcher.Stop()
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	for _, obj := range start.initial {
		if ew.send(watch.Added, obj) != nil {
			return
		}
	}
	if opts.sendInitialEvents() && opts.AllowWatchBookmarks && ew.bookmark(start.since, metav1.InitialEventsAnnotationKey) != nil {
		return
	}
	s.streamEvents(ctx, ew, watcher, ns, opts, start.seen, start.since)
}

// tooOldResourceVersion is kube's 410 for a watch from a resourceVersion
// the change log no longer reaches.
func (s *server) tooOldResourceVersion(rv uint64) *apierrors.StatusError {
	compacted, _ := s.store.Compacted()
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, compacted))
}

// watchState is where a watch starts.
type watchState struct {
	initial []db.Object // sent as ADDED first
	// seen, with selectors, holds the keys of the objects selected at since,
	// to tell an object leaving the selection (DELETED) from one entering
	// it (ADDED); nil without selectors.
	seen  map[string]bool
	since uint64 // the stream carries the changes after this resourceVersion
}

// watchStart prepares a watch: with sendInitialEvents (set or defaulted)
// the current state, not older than the requested resourceVersion; from a
// resourceVersion N, the state at N when selectors need it. A version the
// store has not reached is waited for, as kube's watch cache does.
func (s *server) watchStart(ctx context.Context, rs *resource, ns string, opts listOptions) (watchState, error) {
	if err := s.waitFresh(ctx, opts.rv); err != nil {
		return watchState{}, err
	}
	if opts.SendInitialEvents == nil && !opts.selective() {
		return watchState{since: opts.rv}, nil
	}
	at := opts.rv
	if opts.SendInitialEvents != nil {
		at = 0 // the newest state, which is not older than opts.rv
	}
	items, rv, err := s.store.ListAt(rs.store, ns, opts.LabelSelector, at)
	if errors.Is(err, db.ErrExpired) {
		return watchState{since: opts.rv}, nil // the watch itself reports it
	}
	if err != nil {
		return watchState{}, err
	}
	items = filterFields(rs, items, opts.FieldSelector)
	st := watchState{since: rv}
	if opts.selective() {
		st.seen = make(map[string]bool, len(items))
		for _, it := range items {
			st.seen[watchKey(it)] = true
		}
	}
	if opts.sendInitialEvents() {
		st.initial = items
	}
	return st, nil
}

// watchKey identifies an object among a watch's.
func watchKey(obj db.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// streamEvents forwards the watcher's events until the watch ends.
func (s *server) streamEvents(ctx context.Context, ew *eventWriter, watcher *db.Watcher, ns string,
	opts listOptions, seen map[string]bool, rv uint64) {
	var tick <-chan time.Time
	if opts.AllowWatchBookmarks {
		t := time.NewTicker(bookmarkInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			if opts.AllowWatchBookmarks {
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
					_ = ew.sendStatus(statusFor(err, ew.rs.groupResource(), ""))
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
	key := watchKey(ev.Object)
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

// watchRoutes registers the deprecated watch paths of rs, which kube still
// serves: /…/watch/<plural>, /…/watch/namespaces/{namespace}/<plural> and
// the same with /{name} for one object.
func (s *server) watchRoutes(r *mux.Router, rs *resource) {
	base := rs.gv.prefix() + "/watch"
	paths := []string{base + "/" + rs.plural, base + "/" + rs.plural + "/{name}"}
	if rs.store.Namespaced {
		scoped := base + "/namespaces/{namespace}/" + rs.plural
		paths = []string{base + "/" + rs.plural, scoped, scoped + "/{name}"}
	}
	for _, p := range paths {
		r.HandleFunc(p, s.methods(rs, "", map[string]http.HandlerFunc{http.MethodGet: s.watchPath(rs)}))
	}
}
