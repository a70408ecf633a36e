package api

import (
	"net/http"

	"github.com/gorilla/mux"
)

// routes is the one route table of the API.
func (s *server) routes(r *mux.Router) {
	s.healthRoutes(r, "healthz", s.liveChecks())
	s.healthRoutes(r, "livez", s.liveChecks())
	s.healthRoutes(r, "readyz", s.readyChecks())
	r.HandleFunc("/version", s.version)
	r.HandleFunc("/version/", s.version) // kube-apiserver answers both

	r.HandleFunc("/api", s.coreVersions)
	r.HandleFunc("/apis", s.groupList)
	r.HandleFunc("/openapi/v2", s.openAPIV2)
	r.HandleFunc("/openapi/v3", s.openAPIV3Discovery)
	r.HandleFunc("/openapi/v3/{gv:.+}", s.openAPIV3GroupVersion)

	for _, gv := range groupVersions {
		r.HandleFunc(gv.prefix(), s.resourceList(gv))
		if gv.group != "" {
			r.HandleFunc("/apis/"+gv.group, s.group(gv))
		}
	}
	for _, rs := range resources {
		s.resourceRoutes(r, rs)
		s.watchRoutes(r, rs)
	}
	s.absentKindRoutes(r)
	s.podSubresourceRoutes(r)
	s.nodeProxyRoutes(r)
	s.podEvictionRoute(r)
	s.tokenRequestRoute(r)
	s.resourceMetricsRoutes(r)
	s.reviewRoutes(r)
	r.HandleFunc(ImagesPath, s.images)
	r.HandleFunc(BackupPath, s.backup)
	if s.cfg.Profiling {
		profilingRoutes(r)
	}
}

// resourceRoutes registers the collection, object and subresource paths of
// one resource (namespaced, or cluster-scoped as namespaces and nodes).
// Methods are dispatched inside the handlers so that a wrong method gets a
// MethodNotSupported Status; a verb the resource does not serve is one.
func (s *server) resourceRoutes(r *mux.Router, rs *resource) {
	if rs == eventV1Resource {
		s.eventsV1Routes(r) // converted around the core/v1 handlers
		return
	}
	prefix := rs.gv.prefix()
	collection := prefix + "/" + rs.plural
	if rs.namespaced() {
		r.HandleFunc(collection, s.methods(rs, "", s.verbHandlers(rs, map[string]http.HandlerFunc{
			"list": s.list(rs),
		})))
		collection = prefix + "/namespaces/{namespace}/" + rs.plural
	}
	object := collection + "/{name}"

	r.HandleFunc(collection, s.methods(rs, "", s.verbHandlers(rs, map[string]http.HandlerFunc{
		"list":             s.list(rs),
		"create":           s.create(rs),
		"deletecollection": s.deleteCollection(rs),
	})))
	r.HandleFunc(object, s.methods(rs, "", s.verbHandlers(rs, map[string]http.HandlerFunc{
		"get":    s.get(rs),
		"update": s.update(rs, false),
		"patch":  s.patch(rs, false),
		"delete": s.deleteHandler(rs),
	})))
	if !rs.noStatus {
		r.HandleFunc(object+"/status", s.methods(rs, "status", map[string]http.HandlerFunc{
			http.MethodGet:   s.get(rs),
			http.MethodPut:   s.update(rs, true),
			http.MethodPatch: s.patch(rs, true),
		}))
	}
	if rs.hasLog {
		r.HandleFunc(object+"/log", s.methods(rs, "log", map[string]http.HandlerFunc{
			http.MethodGet: s.podLog,
		}))
	}
}

// verbMethods are the HTTP methods of the verbs.
var verbMethods = map[string]string{
	"list": http.MethodGet, "get": http.MethodGet, "create": http.MethodPost,
	"update": http.MethodPut, "patch": http.MethodPatch, "delete": http.MethodDelete,
	"deletecollection": http.MethodDelete,
}

// verbHandlers maps the verbs rs serves to their handlers by HTTP method.
func (s *server) verbHandlers(rs *resource, byVerb map[string]http.HandlerFunc) map[string]http.HandlerFunc {
	byMethod := map[string]http.HandlerFunc{}
	for verb, h := range byVerb {
		if rs.serves(verb) {
			byMethod[verbMethods[verb]] = h
		}
	}
	return byMethod
}

// methods dispatches on the request method; any other method is a 405
// MethodNotSupported Status.
func (s *server) methods(rs *resource, sub string, byMethod map[string]http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if rs.warning != "" {
			addWarning(w, rs.warning)
		}
		h, ok := byMethod[r.Method]
		if !ok {
			res := rs.groupResource()
			if sub != "" {
				res.Resource += "/" + sub
			}
			writeError(w, r, methodNotSupported(res, r.Method))
			return
		}
		h(w, r)
	}
}
