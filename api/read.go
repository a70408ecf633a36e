package api

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiff-sh/skiff/db"
)

// get serves GET of one object (and of its status subresource).
func (s *server) get(rs *resource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := mux.Vars(r)
		obj, err := s.store.Get(rs.store, v["namespace"], v["name"])
		if err != nil {
			writeError(w, r, statusFor(err, rs.groupResource(), v["name"]))
			return
		}
		s.respond(w, r, rs, http.StatusOK, obj)
	}
}

// list serves GET of a collection: a list, or a watch with ?watch=true.
func (s *server) list(rs *resource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		opts, err := parseListOptions(r, rs)
		if err != nil {
			writeError(w, r, err)
			return
		}
		ns := mux.Vars(r)["namespace"]
		if opts.watch {
			s.watch(w, r, rs, ns, opts)
			return
		}
		items, rv, err := s.store.List(rs.store, ns, opts.label)
		if err != nil {
			writeError(w, r, statusFor(err, rs.groupResource(), ""))
			return
		}
		items = filterFields(rs, items, opts.field)
		page, next := paginate(items, opts)
		meta := metav1.ListMeta{ResourceVersion: strconv.FormatUint(rv, 10), Continue: next}
		s.respondList(w, r, rs, page, meta)
	}
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

// matches reports whether obj matches the list's selectors.
func (opts listOptions) matches(rs *resource, obj db.Object) bool {
	if opts.label != nil && !opts.label.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	return opts.field == nil || opts.field.Matches(rs.fields(obj))
}

// objectKey is the list order key of an object.
func objectKey(obj db.Object) string { return obj.GetNamespace() + "/" + obj.GetName() }

// paginate applies continue and limit to items (ordered by key) and returns
// the page and the continue token of the next one ("" for the last page).
func paginate(items []db.Object, opts listOptions) ([]db.Object, string) {
	if opts.cont != "" {
		start := len(items)
		for i, it := range items {
			if objectKey(it) > opts.cont {
				start = i
				break
			}
		}
		items = items[start:]
	}
	if opts.limit <= 0 || int64(len(items)) <= opts.limit {
		return items, ""
	}
	page := items[:opts.limit]
	return page, continueToken(objectKey(page[len(page)-1]))
}

// respond writes one object as JSON, or as a Table when the client asks.
func (s *server) respond(w http.ResponseWriter, r *http.Request, rs *resource, code int, obj db.Object) {
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
