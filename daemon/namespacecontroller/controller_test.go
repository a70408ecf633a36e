package namespacecontroller

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/db"
)

func openStore(t *testing.T) *db.Store {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

func mustCreate(t *testing.T, store *db.Store, r db.Resource, obj db.Object) {
	t.Helper()
	if err := store.Create(r, obj); err != nil {
		t.Fatalf("creating %s: %v", obj.GetName(), err)
	}
}

func names(t *testing.T, store *db.Store, r db.Resource, ns string) []string {
	t.Helper()
	objs, _, err := store.List(r, ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

// fill creates a terminating namespace "team" holding a Job, a running
// Pod, a pending Pod and an Event, and returns the store.
func fill(t *testing.T) *db.Store {
	t.Helper()
	store := openStore(t)
	mustCreate(t, store, db.Namespaces, newNamespace("team"))
	mustCreate(t, store, db.Jobs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "team"}})
	mustCreate(t, store, db.Pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: "team"},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	mustCreate(t, store, db.Pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "team"}})
	mustCreate(t, store, db.Events, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "job.1", Namespace: "team"}})
	return store
}

// markDeleting is what the API's DELETE of a namespace does.
func markDeleting(t *testing.T, store *db.Store, name string) {
	t.Helper()
	_, err := store.Modify(db.Namespaces, "", name, func(obj db.Object) error {
		ns := obj.(*corev1.Namespace)
		now := metav1.Now()
		ns.DeletionTimestamp, ns.Status.Phase = &now, corev1.NamespaceTerminating
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFinalize(t *testing.T) {
	store := fill(t)
	c := New(Config{Store: store})
	markDeleting(t, store, "team")
	if c.finalize("team") {
		t.Fatal("finalized while a pod was still running")
	}
	if diff := cmp.Diff([]string{"running"}, names(t, store, db.Pods, "team")); diff != "" {
		t.Errorf("pods left (-want,+got):\n%s", diff)
	}
	if got := append(names(t, store, db.Jobs, "team"), names(t, store, db.Events, "team")...); len(got) != 0 {
		t.Errorf("jobs and events left: %v", got)
	}
	obj, err := store.Get(db.Pods, "team", "running")
	if err != nil {
		t.Fatal(err)
	}
	if g := obj.GetDeletionGracePeriodSeconds(); g == nil || *g != 30 {
		t.Errorf("running pod's grace: %v, want 30", g)
	}
	// The pod worker stops the containers and completes the deletion.
	if _, _, err := store.DeleteGracefully(db.Pods, "team", "running", 0); err != nil {
		t.Fatal(err)
	}
	if !c.finalize("team") {
		t.Fatal("not finalized once empty")
	}
	if _, err := store.Get(db.Namespaces, "", "team"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("namespace after finalize: %v", err)
	}
}

func TestFinalizeLeavesActiveNamespaces(t *testing.T) {
	store := fill(t)
	if !New(Config{Store: store}).finalize("team") {
		t.Error("an active namespace has nothing to do")
	}
	if got := names(t, store, db.Pods, "team"); len(got) != 2 {
		t.Errorf("pods of an active namespace deleted: %v", got)
	}
}

func TestRunEmptiesANamespace(t *testing.T) {
	store := fill(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := store.Watch(ctx, db.Namespaces, store.ResourceVersion())
	if err != nil {
		t.Fatal(err)
	}
	pods, err := store.Watch(ctx, db.Pods, store.ResourceVersion())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- New(Config{Store: store, Resync: time.Hour}).Run(ctx) }()
	markDeleting(t, store, "team")
	// Wait until the running pod is being deleted, then finish it as the
	// pod worker would.
	waitFor(t, pods, func(ev db.Event) bool {
		return ev.Object.GetName() == "running" && ev.Object.GetDeletionTimestamp() != nil
	})
	if _, _, err := store.DeleteGracefully(db.Pods, "team", "running", 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, func(ev db.Event) bool { return ev.Type == watch.Deleted && ev.Object.GetName() == "team" })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

func waitFor(t *testing.T, w *db.Watcher, ok func(db.Event) bool) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, open := <-w.Events():
			if !open {
				t.Fatalf("watch ended: %v", w.Err())
			}
			if ok(ev) {
				return
			}
		case <-timeout:
			t.Fatal("timed out")
		}
	}
}

func TestEnsureSystemNamespaces(t *testing.T) {
	store := openStore(t)
	mustCreate(t, store, db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"mine": "1"}}})
	for i := 0; i < 2; i++ {
		if err := EnsureSystemNamespaces(store); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"default", "kube-node-lease", "kube-public", "kube-system"}, names(t, store, db.Namespaces, "")); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	obj, _ := store.Get(db.Namespaces, "", "kube-system")
	ns := obj.(*corev1.Namespace)
	if ns.Status.Phase != corev1.NamespaceActive || ns.Labels[corev1.LabelMetadataName] != "kube-system" {
		t.Errorf("kube-system: %+v", ns)
	}
	obj, _ = store.Get(db.Namespaces, "", "default")
	if obj.GetLabels()["mine"] != "1" {
		t.Error("an existing namespace was replaced")
	}
}

// TestRunRecreatesSystemNamespaces: kube-node-lease deleted comes back at
// the next interval, as kube-apiserver's system namespaces controller
// makes it again.
func TestRunRecreatesSystemNamespaces(t *testing.T) {
	store := openStore(t)
	if err := EnsureSystemNamespaces(store); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := store.Watch(ctx, db.Namespaces, store.ResourceVersion())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- New(Config{Store: store, SystemNamespacesInterval: 10 * time.Millisecond}).Run(ctx)
	}()
	if _, err := store.Delete(db.Namespaces, "", corev1.NamespaceNodeLease); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, func(ev db.Event) bool {
		return ev.Type == watch.Added && ev.Object.GetName() == corev1.NamespaceNodeLease
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
