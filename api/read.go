package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/skiff-sh/skiff/db"
)

// freshnessTimeout bounds the wait for a resourceVersion the store has not
// reached yet.
// NOTE: kube-apiserver's watch cache waits 3 s (blockTimeout) before
// answering "Too large resource version".
var freshnessTimeout = 3 * time.Second

// The messages kube-apiserver gives when a list cannot be served at the
// resourceVersion asked for.
const (
	msgListExpired = "The resourceVersion for the provided list is too old."
	// msgInconsistentContinue comes with a continue token that resumes the
	// list at the newest state.
	msgInconsistentContinue = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response " +
		"to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent " +
		"list - objects that were created, modified, or deleted between the time the first chunk was returned " +
		"and now may show up in the list."
)

// get serves GET of one object (and of its status subresource).
// NOTE: a GET's resourceVersion means "not older than": "" and "0" read the
// newest state, N waits until the store has N.
func (s *server) get(rs *resource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := mux.Vars(r)
		rv, err := parseRV(r.URL.Query().Get("resourceVersion"))
		if err == nil {
			err = s.waitFresh(r.Context(), rv)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		obj, err := s.store.Get(rs.store, v["namespace"], v["name"])
		if err != nil {
			writeError(w, r, statusFor(err, rs.groupResource(), v["name"]))
			return
		}
		s.respond(w, r, rs, http.StatusOK, obj)
	}
}

// waitFresh waits (up to freshnessTimeout) until the store has reached
// resourceVersion rv, then answers kube's 504 "Too large resource version".
func (s *server) waitFresh(ctx context.Context, rv uint64) error {
	if rv <= s.store.ResourceVersion() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, freshnessTimeout)
	defer cancel()
	err := s.store.WaitFor(wctx, rv)
	switch {
	case err == nil:
		return nil
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return tooLargeResourceVersion(fmt.Sprintf("Too large resource version: %d, current: %d", rv, s.store.ResourceVersion()))
	}
	return err
}

// tooLargeResourceVersion is kube-apiserver's 504 for a resourceVersion
// newer than the store's.
func tooLargeResourceVersion(msg string) *apierrors.StatusError {
	err := apierrors.NewTimeoutError(msg, 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version",
	}}
	return err
}

// list serves GET of a collection: a list, or a watch with ?watch=true.
func (s *server) list(rs *resource) http.HandlerFunc {
	return s.listOrWatch(rs, false)
}

// watchPath serves the deprecated /watch/… paths: always a watch, of one
// object when the path names one.
func (s *server) watchPath(rs *resource) http.HandlerFunc {
	return s.listOrWatch(rs, true)
}

func (s *server) listOrWatch(rs *resource, forceWatch bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := mux.Vars(r)
		opts, err := parseListOptions(r, rs, forceWatch, v["name"])
		if err != nil {
			writeError(w, r, err)
			return
		}
		if opts.Watch {
			s.watch(w, r, rs, v["namespace"], opts)
			return
		}
		var buf listBuffer
		defer buf.release()
		items, meta, err := s.listPage(r.Context(), rs, v["namespace"], opts, buf.get)
		if err != nil {
			writeError(w, r, statusFor(err, rs.groupResource(), ""))
			return
		}
		s.respondListed(w, r, rs, items, meta)
	}
}

// listPage reads the page of a list that opts ask for, from one snapshot:
// every page of a paginated list comes from the resourceVersion of its
// first page (carried in the continue token). The items' stored JSON is in
// the buffer that buffer returns (see db.ListStoredInto).
func (s *server) listPage(ctx context.Context, rs *resource, ns string, opts listOptions, buffer func(n int) []byte) ([]listed, metav1.ListMeta, error) {
	at, err := s.listVersion(ctx, opts)
	if err != nil {
		return nil, metav1.ListMeta{}, err
	}
	stored, rv, err := s.store.ListStoredInto(buffer, rs.store, ns, opts.LabelSelector, at)
	switch {
	case errors.Is(err, db.ErrExpired) && opts.cont != nil:
		return nil, metav1.ListMeta{}, expiredContinue(opts.cont)
	case errors.Is(err, db.ErrExpired):
		return nil, metav1.ListMeta{}, apierrors.NewResourceExpired(msgListExpired)
	case err != nil:
		return nil, metav1.ListMeta{}, err
	}
	items := make([]listed, len(stored))
	for i, st := range stored {
		items[i] = listed{Stored: st}
	}
	if items, err = filterListed(rs, items, opts.FieldSelector); err != nil {
		return nil, metav1.ListMeta{}, err
	}
	across := rs.store.Namespaced && ns == ""
	key := func(it listed) string { return listKey(it.Namespace, it.Name, across) }
	slices.SortStableFunc(items, func(a, b listed) int { return strings.Compare(key(a), key(b)) })
	if opts.cont != nil {
		start := strings.TrimSuffix(opts.cont.StartKey, "\x00")
		i, _ := slices.BinarySearchFunc(items, start, func(it listed, k string) int {
			return strings.Compare(key(it), k)
		})
		for i < len(items) && key(items[i]) <= start {
			i++
		}
		items = items[i:]
	}
	meta := metav1.ListMeta{ResourceVersion: strconv.FormatUint(rv, 10)}
	if opts.Limit <= 0 || int64(len(items)) <= opts.Limit {
		return items, meta, nil
	}
	page := items[:opts.Limit]
	meta.Continue = continueToken{ResourceVersion: int64(rv), StartKey: key(page[len(page)-1]) + "\x00"}.encode()
	// NOTE: kube counts the remaining items only when no selector could
	// make the count wrong.
	if !opts.selective() {
		n := int64(len(items)) - opts.Limit
		meta.RemainingItemCount = &n
	}
	return page, meta, nil
}

// listVersion is the resourceVersion a list reads at (0: the newest),
// after waiting for a not-older-than version to be reached.
// NOTE: kube's rules: a continue token pins its list's version (-1: the
// newest); resourceVersionMatch=Exact, or a version with a limit and no
// match (the legacy form), reads exactly that version; otherwise a version
// is a lower bound.
func (s *server) listVersion(ctx context.Context, opts listOptions) (uint64, error) {
	switch {
	case opts.cont != nil && opts.cont.ResourceVersion > 0:
		return uint64(opts.cont.ResourceVersion), nil
	case opts.cont != nil:
		return 0, nil
	}
	if err := s.waitFresh(ctx, opts.rv); err != nil {
		return 0, err
	}
	exact := opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
		opts.ResourceVersionMatch == "" && opts.Limit > 0
	if exact {
		return opts.rv, nil
	}
	return 0, nil
}

// expiredContinue is kube's 410 for a continue token whose snapshot is no
// longer retained: it carries a token that continues at the newest state.
func expiredContinue(c *continueToken) error {
	err := apierrors.NewResourceExpired(msgInconsistentContinue)
	err.ErrStatus.ListMeta.Continue = continueToken{ResourceVersion: -1, StartKey: c.StartKey}.encode()
	return err
}

// filterFields keeps the items matching the field selector.
func filterFields(rs *resource, items []db.Object, sel fields.Selector) []db.Object {
	if sel == nil || sel.Empty() {
		return items
	}
	out := items[:0]
	for _, it := range items {
		if sel.Matches(rs.fields(it)) {
			out = append(out, it)
		}
	}
	return out
}

// respond writes one object as JSON, or as a Table when the client asks.
func (s *server) respond(w http.ResponseWriter, r *http.Request, rs *resource, code int, obj db.Object) {
	if rs.warnings != nil && isWrite(r.Method) {
		for _, msg := range rs.warnings(obj, code == http.StatusCreated) {
			addWarning(w, msg)
		}
	}
	if tv, ok := wantsTable(r); ok {
		writeJSON(w, r, code, rs.table(r, tv, []db.Object{obj}, metav1.ListMeta{ResourceVersion: obj.GetResourceVersion()}))
		return
	}
	rs.setTypeMeta(obj)
	writeJSON(w, r, code, obj)
}

// respondList writes a list as the kind's List, or as a Table.
func (s *server) respondList(w http.ResponseWriter, r *http.Request, rs *resource, items []db.Object, meta metav1.ListMeta) {
	if tv, ok := wantsTable(r); ok {
		writeJSON(w, r, http.StatusOK, rs.table(r, tv, items, meta))
		return
	}
	writeJSON(w, r, http.StatusOK, rs.newList(items, meta))
}

// isWrite reports whether method creates or changes an object.
func isWrite(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}
