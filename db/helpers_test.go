package db

import (
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// openStore opens a store in a fresh temp dir, closed at cleanup.
func openStore(t testing.TB, opts ...Option) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "skiff.db")
	s, err := Open(path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func newPod(namespace, name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox:1.35", Command: []string{"true"}}},
		},
	}
}

func mustCreate(t testing.TB, s *Store, r Resource, obj Object) {
	t.Helper()
	if err := s.Create(r, obj); err != nil {
		t.Fatalf("Create %s: %v", obj.GetName(), err)
	}
}

func mustGetPod(t testing.TB, s *Store, namespace, name string) *corev1.Pod {
	t.Helper()
	obj, err := s.Get(Pods, namespace, name)
	if err != nil {
		t.Fatalf("Get %s/%s: %v", namespace, name, err)
	}
	return obj.(*corev1.Pod)
}

func names(objs []Object) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, describeKey(o.GetNamespace(), o.GetName()))
	}
	return out
}

// receive reads n events from w, failing the test if they do not come.
func receive(t testing.TB, w *Watcher, n int) []Event {
	t.Helper()
	var out []Event
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				t.Fatalf("watch ended after %d of %d events: %v", len(out), n, w.Err())
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatalf("timed out after %d of %d events", len(out), n)
		}
	}
	return out
}

// waitEnded waits for w's Events to close, draining it, and returns Err.
func waitEnded(t testing.TB, w *Watcher) error {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
		case <-timeout:
			t.Fatal("watch did not end")
		}
	}
}

// summary is an event reduced to what tests compare.
type summary struct {
	Type string
	Key  string
	RV   uint64
}

func summarize(events []Event) []summary {
	out := make([]summary, 0, len(events))
	for _, ev := range events {
		out = append(out, summary{string(ev.Type), describeKey(ev.Object.GetNamespace(), ev.Object.GetName()), ev.RV})
	}
	return out
}
