package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestIsLongRunning(t *testing.T) {
	tests := map[string]bool{
		"/api/v1/namespaces/ns/pods":                         false,
		"/api/v1/namespaces/ns/pods?watch=true":              true,
		"/api/v1/namespaces/ns/pods?watch=1":                 true,
		"/api/v1/namespaces/ns/pods?watch=false":             false,
		"/api/v1/namespaces/ns/pods?watch=0":                 false,
		"/api/v1/watch/namespaces/ns/pods":                   true,
		"/apis/batch/v1/watch/jobs":                          true,
		"/apis/batch/v1/namespaces/ns/jobs/watch":            false, // a Job named watch
		"/api/v1/namespaces/ns/pods/p/log":                   true,
		"/api/v1/namespaces/ns/pods/p/exec":                  true,
		"/api/v1/namespaces/ns/pods/p/attach":                true,
		"/api/v1/namespaces/ns/pods/p/portforward":           true,
		"/api/v1/namespaces/ns/pods/p/status":                false,
		"/api/v1/namespaces/ns/pods/p/ephemeralcontainers":   false,
		"/api/v1/namespaces/ns/pods/log":                     false, // a pod named log
		"/apis/batch/v1/namespaces/ns/jobs/j/status":         false,
		"/skiff/v1/backup":                                   true,
		"/api/v1/namespaces/ns/pods/p/eviction":              false,
		"/apis/events.k8s.io/v1/namespaces/ns/events?watch=": true, // kube: anything but false/0
	}
	for target, want := range tests {
		if got := isLongRunning(httptest.NewRequest(http.MethodGet, target, nil)); got != want {
			t.Errorf("isLongRunning(%s) = %v, want %v", target, got, want)
		}
	}
	for method, want := range map[string]bool{http.MethodPost: true, http.MethodGet: false} {
		if got := isLongRunning(httptest.NewRequest(method, ImagesPath, nil)); got != want {
			t.Errorf("isLongRunning(%s %s) = %v, want %v", method, ImagesPath, got, want)
		}
	}
}

// TestSlowBodyIsCutOff: a client that sends its body too slowly gets kube's
// 504 Timeout Status and its connection closed, while a watch opened at
// the same time stays open past the timeout.
func TestSlowBodyIsCutOff(t *testing.T) {
	ts := newTestServerWith(t, Config{RequestTimeout: 300 * time.Millisecond})
	addr := strings.TrimPrefix(ts.URL, "http://")

	watch, err := http.Get(ts.URL + "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=30")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	start := time.Now()
	go func() { // a byte now and then, far too slowly
		for range 20 {
			time.Sleep(100 * time.Millisecond)
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer to a slow body: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("answer %d %q: %v", resp.StatusCode, body, err)
	}
	if resp.StatusCode != http.StatusGatewayTimeout || st.Reason != metav1.StatusReasonTimeout ||
		st.Message != "Timeout: request did not complete within the allotted timeout" {
		t.Errorf("answer %d %+v, want kube's 504 Timeout", resp.StatusCode, st)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("cut off after %s", took)
	}
	if n, err := conn.Read(make([]byte, 1)); err == nil {
		t.Errorf("connection still open after the timeout (read %d bytes)", n)
	}

	// The watch is still open: a pod created now reaches it.
	if _, err := http.Post(ts.URL+"/api/v1/namespaces/default/pods", "application/json",
		strings.NewReader(`{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)); err != nil {
		t.Fatal(err)
	}
	var ev metav1.WatchEvent
	if err := json.NewDecoder(watch.Body).Decode(&ev); err != nil || ev.Type != "ADDED" {
		t.Errorf("watch after the timeout: %+v, %v; want the ADDED event", ev, err)
	}
}
