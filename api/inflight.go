package api

import (
	"net/http"
)

// DefaultMaxInFlight is how many requests that are not long-running the
// API serves at once on a machine with cpus CPUs: reads, and writes apart
// (kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight), 8 and 4 per CPU, at most kube's 400
// and 200.
//
// NOTE: kube's defaults are sized for a control plane. Measured on 2 CPUs
// with 5000 pods stored: each list of all pods holds about 37 MiB while it
// is served; 10 clients listing at once took skiffd to 750 MiB and a GET
// to 150 ms, 100 clients to 3.9 GiB and 2.6 s, for barely twice the lists
// served (the CPUs are saturated with a few). Beyond a few requests per
// CPU more concurrency only costs memory and latency: the rest are told
// to come back (429), as kube does past its limits.
func DefaultMaxInFlight(cpus int) (nonMutating, mutating int) {
	return min(8*cpus, 400), min(4*cpus, 200)
}

// withMaxInFlight answers 429 to a request that is not long-running while
// the API already serves limit others of its kind (reads: GET, HEAD and
// OPTIONS; writes: the other methods), as kube-apiserver's
// WithMaxInFlightLimit does: text, not a Status, and "Retry-After: 1",
// which client-go honours by retrying. A limit of 0 is no limit.
func withMaxInFlight(nonMutating, mutating int, next http.Handler) http.Handler {
	seats := func(n int) chan struct{} {
		if n <= 0 {
			return nil
		}
		return make(chan struct{}, n)
	}
	reads, writes := seats(nonMutating), seats(mutating)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := writes
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			c = reads
		}
		if c == nil || isLongRunning(r) {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case c <- struct{}{}:
			defer func() { <-c }()
			next.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
		}
	})
}
