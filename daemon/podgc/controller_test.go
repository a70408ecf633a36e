package podgc

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/db"
)

// TestOrphansCollected: pods of a node missing for the quarantine are
// marked Failed (DeletionByPodGC) and deleted; pods of a node that exists,
// or comes back in time, and of skiffd's node stay.
func TestOrphansCollected(t *testing.T) {
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	create := func(r db.Resource, obj db.Object) {
		t.Helper()
		if err := store.Create(r, obj); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	create(db.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "there"}})
	create(db.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "back"}})
	for _, p := range []*corev1.Pod{pod("orphan", "gone"), pod("kept", "there"), pod("back", "back"), pod("own", "self")} {
		create(db.Pods, p)
	}
	if _, err := store.Delete(db.Nodes, "", "back"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := store.Watch(ctx, db.Pods, store.ResourceVersion())
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	done := make(chan error, 1)
	go func() { done <- New(Config{Store: store, NodeName: "self", Clock: clk}).Run(ctx) }()
	// The node comes back within the quarantine.
	create(db.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "back"}})

	timeout := time.After(20 * time.Second)
	var failed *corev1.Pod
	for deleted := false; !deleted; {
		select {
		case ev := <-w.Events():
			p := ev.Object.(*corev1.Pod)
			if p.Name != "orphan" {
				t.Errorf("%s changed: %s", p.Name, ev.Type)
			}
			if ev.Type == watch.Modified {
				failed = p
			}
			deleted = ev.Type == watch.Deleted
		case <-time.After(10 * time.Millisecond):
			// Past the quarantine of every node queued so far.
			clk.Step(DefaultQuarantine)
		case <-timeout:
			t.Fatal("timed out waiting for the orphan's deletion")
		}
	}
	var reason string
	for _, c := range failed.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			reason = c.Reason + ": " + c.Message
		}
	}
	if failed.Status.Phase != corev1.PodFailed || reason != "DeletionByPodGC: PodGC: node no longer exists" {
		t.Errorf("orphan marked %s, %q", failed.Status.Phase, reason)
	}
	for _, name := range []string{"kept", "back", "own"} {
		if _, err := store.Get(db.Pods, "default", name); errors.Is(err, db.ErrNotFound) {
			t.Errorf("%s collected", name)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
