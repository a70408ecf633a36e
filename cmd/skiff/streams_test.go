package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// fakeLogServer answers a pod's GET and its /log requests from scripted
// answers, one per request, and records the log queries.
type fakeLogServer struct {
	mu      sync.Mutex
	logs    []func(w http.ResponseWriter) // one per /log request, in order
	phases  []corev1.PodPhase             // one per pod GET; the last repeats
	queries []string
}

func (f *fakeLogServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/api/v1/namespaces/ns/pods/p/log":
		f.queries = append(f.queries, r.URL.RawQuery)
		answer := f.logs[0]
		if len(f.logs) > 1 {
			f.logs = f.logs[1:]
		}
		answer(w)
	case "/api/v1/namespaces/ns/pods/p":
		phase := f.phases[0]
		if len(f.phases) > 1 {
			f.phases = f.phases[1:]
		}
		pod := corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever},
			Status:     corev1.PodStatus{Phase: phase},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(pod)
	default:
		http.NotFound(w, r)
	}
}

func logLines(lines string, cut bool) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		_, _ = io.WriteString(w, lines)
		if cut {
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the server went away mid-stream
		}
	}
}

func waitingToStart(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"container \"c\" in pod \"p\" is waiting to start: ContainerCreating","reason":"BadRequest","code":400}`)
}

func TestFollow(t *testing.T) {
	tests := map[string]struct {
		server      *fakeLogServer
		wantOut     string
		wantQueries int
		wantSince   bool // the last query resumes with sinceTime
	}{
		"a stream cut and opened again": {
			server: &fakeLogServer{
				logs: []func(http.ResponseWriter){
					logLines("2025-03-01T12:00:00.1Z one\n2025-03-01T12:00:00.2Z two\n", true),
					logLines("2025-03-01T12:00:00.1Z one\n2025-03-01T12:00:00.2Z two\n2025-03-01T12:00:01Z three\n", false),
				},
				phases: []corev1.PodPhase{corev1.PodSucceeded},
			},
			wantOut: "[p/c] one\n[p/c] two\n[p/c] three\n", wantQueries: 2, wantSince: true,
		},
		"a clean end while the pod runs on (skiffd shutting down)": {
			server: &fakeLogServer{
				logs: []func(http.ResponseWriter){
					logLines("2025-03-01T12:00:00Z one\n", false),
					logLines("2025-03-01T12:00:00Z one\n2025-03-01T12:00:02Z two\n", false),
				},
				phases: []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded},
			},
			wantOut: "[p/c] one\n[p/c] two\n", wantQueries: 2, wantSince: true,
		},
		"not running yet": {
			server: &fakeLogServer{
				logs:   []func(http.ResponseWriter){waitingToStart, waitingToStart, waitingToStart, waitingToStart, waitingToStart, waitingToStart, logLines("2025-03-01T12:00:00Z at last\n", false)},
				phases: []corev1.PodPhase{corev1.PodPending, corev1.PodPending, corev1.PodPending, corev1.PodPending, corev1.PodPending, corev1.PodPending, corev1.PodSucceeded},
			},
			wantOut: "[p/c] at last\n", wantQueries: 7,
		},
		"refused": {
			server: &fakeLogServer{
				logs: []func(http.ResponseWriter){func(w http.ResponseWriter) {
					w.WriteHeader(http.StatusForbidden)
					_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"forbidden","reason":"Forbidden","code":403}`)
				}},
				phases: []corev1.PodPhase{corev1.PodRunning},
			},
			wantQueries: maxStreamRefusals,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(tt.server)
			defer srv.Close()
			cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
			var out, errb bytes.Buffer
			s := newStreams(context.Background(), cs, "ns", newConsole(&out, &errb))
			s.retry = time.Millisecond
			s.follow("p", "c")
			if diff := cmp.Diff(tt.wantOut, out.String()); diff != "" {
				t.Errorf("output (-want,+got):\n%s\nstderr: %s", diff, errb.String())
			}
			q := tt.server.queries
			if len(q) != tt.wantQueries {
				t.Fatalf("log queries %q, want %d", q, tt.wantQueries)
			}
			if got := strings.Contains(q[len(q)-1], "sinceTime="); got != tt.wantSince {
				t.Errorf("last query %q: sinceTime %v, want %v", q[len(q)-1], got, tt.wantSince)
			}
			if !strings.Contains(q[0], "follow=true") || !strings.Contains(q[0], "timestamps=true") || !strings.Contains(q[0], "container=c") {
				t.Errorf("first query %q", q[0])
			}
		})
	}
}
