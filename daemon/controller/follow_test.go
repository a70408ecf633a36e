package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/db"
)

// stalledWatch is a Loop following pods whose handler stops at the pod
// "block" until release is closed, so that its watch falls behind.
type stalledWatch struct {
	events  log
	deleted map[string]*corev1.Pod // the objects of Deleted events, by name
	release chan struct{}
}

func followPods(t *testing.T, s *db.Store) *stalledWatch {
	t.Helper()
	sw := &stalledWatch{deleted: map[string]*corev1.Pod{}, release: make(chan struct{})}
	start(t, New(Config[string]{Store: s, Watches: []Watch{{Resource: db.Pods, OnEvent: func(ev db.Event) {
		if ev.Type == "DELETED" {
			sw.deleted[ev.Object.GetName()] = ev.Object.(*corev1.Pod)
		}
		sw.events.add("%s %s", ev.Type, ev.Object.GetName())
		if ev.Object.GetName() == "block" {
			<-sw.release
		}
	}}}}))
	return sw
}

func modify(t *testing.T, s *db.Store, name string) {
	t.Helper()
	if _, err := s.Modify(db.Pods, "ns", name, func(o db.Object) error {
		o.SetAnnotations(map[string]string{"changed": o.GetResourceVersion()})
		return nil
	}); err != nil {
		t.Fatalf("modifying %s: %v", name, err)
	}
}

func remove(t *testing.T, s *db.Store, name string) {
	t.Helper()
	if _, err := s.Delete(db.Pods, "ns", name); err != nil {
		t.Fatalf("deleting %s: %v", name, err)
	}
}

func TestTooSlowWatchResumesWhereItStopped(t *testing.T) {
	s := openStore(t, db.WithWatchQueueLimit(5))
	mustCreate(t, s, newPod("first"))
	sw := followPods(t, s)
	// The list first: "block" created before it would be listed first.
	waitFor(t, "the first list", sw.events.has("ADDED first"))
	mustCreate(t, s, newPod("block"))
	waitFor(t, "the handler to stall", sw.events.has("ADDED block"))
	want := []string{"ADDED first", "ADDED block"}
	for _, name := range []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"} {
		mustCreate(t, s, newPod(name))
		want = append(want, "ADDED "+name)
	}
	modify(t, s, "p3")
	remove(t, s, "p5")
	want = append(want, "MODIFIED p3", "DELETED p5")
	close(sw.release) // its watch ended meanwhile: 10 changes queued, 5 allowed
	mustCreate(t, s, newPod("after"))
	want = append(want, "ADDED after")
	waitFor(t, "the change after the resume", sw.events.has("ADDED after"))
	if diff := cmp.Diff(want, sw.events.get()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestExpiredWatchRelistsWhatChanged(t *testing.T) {
	s := openStore(t, db.WithWatchQueueLimit(3), db.WithChangeLogSize(3))
	owner := metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "job", UID: "job-uid"}
	del := newPod("del")
	del.Labels = map[string]string{"app": "x"}
	del.OwnerReferences = []metav1.OwnerReference{owner}
	mustCreate(t, s, newPod("keep"), newPod("mod"), del, newPod("re"))
	oldRe, err := s.Get(db.Pods, "ns", "re")
	if err != nil {
		t.Fatal(err)
	}
	sw := followPods(t, s)
	// The list first: "block" created before it would be listed with the rest.
	waitFor(t, "the first list", sw.events.has("ADDED re"))
	mustCreate(t, s, newPod("block"))
	waitFor(t, "the handler to stall", sw.events.has("ADDED block"))

	modify(t, s, "mod")
	remove(t, s, "del")
	remove(t, s, "re")
	mustCreate(t, s, newPod("re"), newPod("new"), newPod("temp"))
	remove(t, s, "temp")
	close(sw.release) // its watch ended meanwhile, and the change log moved past it
	// Only once the relist is handing on (its list taken) may a change
	// come that the list must not hold.
	waitFor(t, "the relist", sw.events.has("ADDED new"))
	mustCreate(t, s, newPod("after"))
	waitFor(t, "the change after the relist", sw.events.has("ADDED after"))

	want := []string{
		"ADDED del", "ADDED keep", "ADDED mod", "ADDED re", "ADDED block",
		// gone first, in key order; then new and changed, in list order
		"DELETED del", "DELETED re", "MODIFIED mod", "ADDED new", "ADDED re",
		"ADDED after",
	}
	if diff := cmp.Diff(want, sw.events.get()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	tomb := sw.deleted["del"]
	wantMeta := metav1.ObjectMeta{Namespace: "ns", Name: "del", UID: del.UID, ResourceVersion: del.ResourceVersion,
		Labels: del.Labels, OwnerReferences: []metav1.OwnerReference{owner}}
	if diff := cmp.Diff(wantMeta, tomb.ObjectMeta); diff != "" {
		t.Errorf("tombstone of del (-want +got):\n%s", diff)
	}
	if got := sw.deleted["re"].UID; got != oldRe.GetUID() || got == types.UID("") {
		t.Errorf("tombstone of re has uid %q, want the old pod's %q", got, oldRe.GetUID())
	}
}
