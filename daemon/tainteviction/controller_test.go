package tainteviction

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/daemon/events"
	"github.com/skiff-sh/skiff/db"
)

type fixture struct {
	t     *testing.T
	store *db.Store
	clock *testingclock.FakeClock
}

func start(t *testing.T, objs ...db.Object) *fixture {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	if err := store.Create(db.Namespaces, ns); err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		r := db.Pods
		if _, ok := obj.(*corev1.Node); ok {
			r = db.Nodes
		}
		if err := store.Create(r, obj); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{t: t, store: store, clock: testingclock.NewFakeClock(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))}
	b := events.NewBroadcaster(events.Config{Store: store})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = b.Run(ctx); done <- struct{}{} }()
	c := New(Config{Store: store, Recorder: b.NewRecorder(corev1.EventSource{Component: Component}), Clock: f.clock})
	go func() { _ = c.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return f
}

func node(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
}

func pod(name, nodeName string, tolerationSeconds ...int64) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: nodeName}}
	for _, s := range tolerationSeconds {
		tol := corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
		if s >= 0 {
			tol.TolerationSeconds = &s
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, tol)
	}
	return p
}

var noExecute = corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoExecute}

// setTaints replaces the node's taints.
func (f *fixture) setTaints(name string, taints ...corev1.Taint) {
	f.t.Helper()
	obj, err := f.store.Get(db.Nodes, "", name)
	if err != nil {
		f.t.Fatal(err)
	}
	n := obj.(*corev1.Node)
	n.Spec.Taints = taints
	if err := f.store.Update(db.Nodes, n); err != nil {
		f.t.Fatal(err)
	}
}

// evicted reports whether the pod is being deleted, with kube's condition.
func (f *fixture) evicted(name string) bool {
	obj, err := f.store.Get(db.Pods, "default", name)
	if err != nil {
		f.t.Fatal(err)
	}
	p := obj.(*corev1.Pod)
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Reason == reasonDeletionByTaintManager && c.Message == messageDeletionByTaintManager {
			return true
		}
	}
	f.t.Fatalf("%s deleted without the DisruptionTarget condition: %+v", name, p.Status.Conditions)
	return false
}

func (f *fixture) waitFor(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fixture) hasEvent(message string) bool {
	objs, _, err := f.store.List(db.Events, "default", nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, obj := range objs {
		if e := obj.(*corev1.Event); e.Reason == reasonTaintManagerEviction && e.Message == message {
			return true
		}
	}
	return false
}

// TestEvictionTimes: on a taint, the intolerant pod goes at once, a pod
// tolerating it for a while after the least of its tolerationSeconds, a
// pod tolerating it for good never, a pod of another node never; the
// taint removed cancels what is pending.
func TestEvictionTimes(t *testing.T) {
	f := start(t, node("n"), node("other"),
		pod("intolerant", "n"), pod("ten", "n", 10, 30), pod("nine", "n", 9), pod("forever", "n", -1),
		pod("twenty", "n", 20), pod("elsewhere", "other"))
	f.setTaints("n", noExecute)
	f.waitFor("the intolerant pod evicted", func() bool { return f.evicted("intolerant") })
	f.waitFor("the eviction event", func() bool { return f.hasEvent("Marking for deletion Pod default/intolerant") })

	f.clock.Step(9 * time.Second)
	f.waitFor("the 9s pod evicted", func() bool { return f.evicted("nine") })
	if f.evicted("ten") {
		t.Error("the pod tolerating 10s (and 30s) evicted after 9s")
	}
	f.clock.Step(time.Second)
	f.waitFor("the 10s pod evicted", func() bool { return f.evicted("ten") })

	f.setTaints("n")
	f.waitFor("the 20s eviction cancelled", func() bool { return f.hasEvent("Cancelling deletion of Pod default/twenty") })
	f.clock.Step(time.Minute)
	// A pod added to the queue after the step shows the queue has moved on.
	if err := f.store.Create(db.Pods, pod("late", "n")); err != nil {
		t.Fatal(err)
	}
	f.setTaints("n", noExecute)
	f.waitFor("the late pod evicted", func() bool { return f.evicted("late") })
	for _, name := range []string{"twenty", "forever", "elsewhere"} {
		if f.evicted(name) {
			t.Errorf("%s evicted", name)
		}
	}
}
