package api

import (
	"net/http/pprof"

	"github.com/gorilla/mux"
)

// profilingRoutes serves Go's profiles under /debug/pprof/, as
// kube-apiserver does with --profiling: heap, goroutine, allocs, … by name,
// and the CPU profile and execution trace of ?seconds=N.
func profilingRoutes(r *mux.Router) {
	r.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	r.HandleFunc("/debug/pprof/profile", pprof.Profile)
	r.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	r.HandleFunc("/debug/pprof/trace", pprof.Trace)
	r.PathPrefix("/debug/pprof/").HandlerFunc(pprof.Index)
}
