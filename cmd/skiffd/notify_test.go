package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLivezProbeOverTLS: without a socket, the watchdog's probe asks the
// HTTPS listener (skiffd's own certificate, which it need not verify).
func TestLivezProbeOverTLS(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/livez" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	probe := livezProbe(strings.TrimPrefix(srv.URL, "https://"), "")
	if err := probe(context.Background()); err != nil {
		t.Errorf("a live API: %v", err)
	}
	status = http.StatusInternalServerError
	if err := probe(context.Background()); err == nil {
		t.Error("a 500 from /livez passed the probe")
	}
}
