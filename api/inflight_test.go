package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMaxInFlight: past its limit a kind of request gets kube's 429; the
// other kind and long-running requests are not held back.
func TestMaxInFlight(t *testing.T) {
	inside := make(chan struct{})
	release := make(chan struct{})
	h := withMaxInFlight(1, 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("hold") != "" {
			inside <- struct{}{}
			<-release
		}
		w.WriteHeader(http.StatusOK)
	}))
	serve := func(method, target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
		return rec
	}
	done := make(chan struct{})
	go func() { serve(http.MethodGet, "/api/v1/pods?hold=1"); close(done) }()
	<-inside

	rec := serve(http.MethodGet, "/api/v1/pods")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" ||
		strings.TrimSpace(rec.Body.String()) != "Too many requests, please try again later." {
		t.Errorf("a read past the limit: %d %q Retry-After %q, want kube's 429", rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"))
	}
	for _, c := range []struct{ method, target string }{
		{http.MethodPost, "/api/v1/namespaces/default/pods"},        // writes have their own seats
		{http.MethodGet, "/api/v1/pods?watch=true"},                 // long-running
		{http.MethodGet, "/api/v1/namespaces/default/pods/p/log"},   // long-running
		{http.MethodPost, "/api/v1/namespaces/default/pods/p/exec"}, // long-running
	} {
		if rec := serve(c.method, c.target); rec.Code != http.StatusOK {
			t.Errorf("%s %s while a read holds the only seat: %d", c.method, c.target, rec.Code)
		}
	}
	close(release)
	<-done
	if rec := serve(http.MethodGet, "/api/v1/pods"); rec.Code != http.StatusOK {
		t.Errorf("a read once the seat is free: %d", rec.Code)
	}
}
