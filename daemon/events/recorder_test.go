package events

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/db"
)

var t0 = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)

// newTestBroadcaster is a Broadcaster over a fresh store holding the
// namespaces given, with a fake clock at t0. Run is not started: tests
// flush the queue with flush.
func newTestBroadcaster(t *testing.T, cfg Config, namespaces ...string) (*Broadcaster, *clocktesting.FakeClock) {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	for _, ns := range namespaces {
		if err := store.Create(db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatalf("creating namespace: %v", err)
		}
	}
	clock := clocktesting.NewFakeClock(t0)
	cfg.Store, cfg.Clock = store, clock
	return NewBroadcaster(cfg), clock
}

// flush writes everything queued, as Run does.
func (b *Broadcaster) flush() {
	for {
		select {
		case ev := <-b.queue:
			b.write(b.drain(ev))
		default:
			return
		}
	}
}

func listEvents(t *testing.T, b *Broadcaster) []corev1.Event {
	t.Helper()
	objs, _, err := b.cfg.Store.List(db.Events, "", nil)
	if err != nil {
		t.Fatalf("listing events: %v", err)
	}
	out := make([]corev1.Event, len(objs))
	for i, o := range objs {
		out[i] = *o.(*corev1.Event)
	}
	return out
}

func testJob() *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "pi", Namespace: "default", UID: "job-uid", ResourceVersion: "7"}}
}

func TestEventShape(t *testing.T) {
	b, _ := newTestBroadcaster(t, Config{}, "default")
	b.NewRecorder(corev1.EventSource{Component: "job-controller"}).
		Event(testJob(), corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", "pi-abcde")
	b.flush()
	got := listEvents(t, b)
	if len(got) != 1 {
		t.Fatalf("want 1 event, got %d", len(got))
	}
	ev := got[0]
	ev.ObjectMeta = metav1.ObjectMeta{Name: ev.Name, Namespace: ev.Namespace}
	ts := metav1.NewTime(t0)
	want := corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pi.%x", t0.UnixNano()), Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: "default", Name: "pi",
			UID: "job-uid", ResourceVersion: "7"},
		Reason: "SuccessfulCreate", Message: "Created pod: pi-abcde", Type: corev1.EventTypeNormal,
		FirstTimestamp: ts, LastTimestamp: ts, Count: 1,
		Source: corev1.EventSource{Component: "job-controller"}, ReportingController: "job-controller",
	}
	if diff := cmp.Diff(want, ev); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestEventReferences(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "pod-uid", ResourceVersion: "3"}}
	container := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", UID: "pod-uid",
		FieldPath: "spec.containers{c}"}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}
	tests := map[string]struct {
		in     runtime.Object
		want   corev1.ObjectReference
		wantNS string
	}{
		"pod": {in: pod, wantNS: "ns",
			want: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "p", UID: "pod-uid", ResourceVersion: "3"}},
		"container reference": {in: container, wantNS: "ns", want: *container},
		"cluster-scoped node": {in: node, wantNS: "default",
			want: corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: "n1", UID: "node-uid"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b, _ := newTestBroadcaster(t, Config{}, "default", "ns")
			b.NewRecorder(corev1.EventSource{Component: "kubelet", Host: "n1"}).
				Event(tc.in, corev1.EventTypeNormal, "Started", "Started container c")
			b.flush()
			got := listEvents(t, b)
			if len(got) != 1 {
				t.Fatalf("want 1 event, got %d", len(got))
			}
			if diff := cmp.Diff(tc.want, got[0].InvolvedObject); diff != "" {
				t.Errorf("involvedObject (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNS, got[0].Namespace); diff != "" {
				t.Errorf("namespace (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"kubelet", "n1"}, []string{got[0].ReportingController, got[0].ReportingInstance}); diff != "" {
				t.Errorf("reporting (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestEventDedupe(t *testing.T) {
	type seen struct {
		Reason, Message string
		Count           int32
		First, Last     time.Time
	}
	tests := map[string]struct {
		record func(r *Recorder, clock *clocktesting.FakeClock, flush func())
		want   []seen
	}{
		"repeats in one batch count on one event": {
			record: func(r *Recorder, clock *clocktesting.FakeClock, flush func()) {
				for i := 0; i < 3; i++ {
					r.Event(testJob(), corev1.EventTypeWarning, "BackOff", "Back-off")
					clock.Step(time.Second)
				}
			},
			want: []seen{{"BackOff", "Back-off", 3, t0, t0.Add(2 * time.Second)}},
		},
		"repeats across batches count on one event": {
			record: func(r *Recorder, clock *clocktesting.FakeClock, flush func()) {
				for i := 0; i < 3; i++ {
					r.Event(testJob(), corev1.EventTypeWarning, "BackOff", "Back-off")
					flush()
					clock.Step(time.Minute)
				}
			},
			want: []seen{{"BackOff", "Back-off", 3, t0, t0.Add(2 * time.Minute)}},
		},
		"another message is another event": {
			record: func(r *Recorder, clock *clocktesting.FakeClock, flush func()) {
				r.Event(testJob(), corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", "a")
				r.Event(testJob(), corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", "b")
			},
			want: []seen{{"SuccessfulCreate", "Created pod: a", 1, t0, t0}, {"SuccessfulCreate", "Created pod: b", 1, t0, t0}},
		},
		"a newer resourceVersion of the object is the same event": {
			record: func(r *Recorder, clock *clocktesting.FakeClock, flush func()) {
				r.Event(testJob(), corev1.EventTypeNormal, "Completed", "Job completed")
				j := testJob()
				j.ResourceVersion = "8"
				r.Event(j, corev1.EventTypeNormal, "Completed", "Job completed")
			},
			want: []seen{{"Completed", "Job completed", 2, t0, t0}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b, clock := newTestBroadcaster(t, Config{}, "default")
			tc.record(b.NewRecorder(corev1.EventSource{Component: "job-controller"}), clock, b.flush)
			b.flush()
			var got []seen
			for _, ev := range listEvents(t, b) {
				got = append(got, seen{ev.Reason, ev.Message, ev.Count, ev.FirstTimestamp.UTC(), ev.LastTimestamp.UTC()})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestEventExpiry(t *testing.T) {
	b, clock := newTestBroadcaster(t, Config{}, "default")
	r := b.NewRecorder(corev1.EventSource{Component: "job-controller"})
	r.Event(testJob(), corev1.EventTypeNormal, "Old", "old")
	r.Event(testJob(), corev1.EventTypeNormal, "Repeated", "repeated")
	b.flush()
	clock.Step(50 * time.Minute)
	r.Event(testJob(), corev1.EventTypeNormal, "Repeated", "repeated") // seen again: lives on
	r.Event(testJob(), corev1.EventTypeNormal, "New", "new")
	b.flush()
	clock.Step(20 * time.Minute)
	b.sweep()
	reasons := func() []string {
		var out []string
		for _, ev := range listEvents(t, b) {
			out = append(out, ev.Reason)
		}
		return out
	}
	if diff := cmp.Diff([]string{"Repeated", "New"}, reasons()); diff != "" {
		t.Errorf("after 70 minutes (-want,+got):\n%s", diff)
	}
	clock.Step(time.Hour)
	b.sweep()
	if got := reasons(); len(got) != 0 {
		t.Errorf("after 130 minutes: %v", got)
	}
	// A repeat of an expired event starts a new one.
	r.Event(testJob(), corev1.EventTypeNormal, "Repeated", "repeated")
	b.flush()
	if got := listEvents(t, b); len(got) != 1 || got[0].Count != 1 {
		t.Errorf("repeat after expiry: %+v", got)
	}
}

func TestEventNeverBlocks(t *testing.T) {
	b, _ := newTestBroadcaster(t, Config{QueueSize: 2}, "default")
	r := b.NewRecorder(corev1.EventSource{Component: "job-controller"})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 10; i++ {
			r.Event(testJob(), corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %d", i)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Event blocked on a full queue")
	}
	b.mu.Lock()
	dropped := b.dropped
	b.mu.Unlock()
	if dropped != 8 {
		t.Errorf("dropped %d events, want 8", dropped)
	}
	b.flush()
	if got := len(listEvents(t, b)); got != 2 {
		t.Errorf("stored %d events, want the 2 queued", got)
	}
}

func TestEventsInClosedNamespacesAreDropped(t *testing.T) {
	b, _ := newTestBroadcaster(t, Config{}, "default", "leaving")
	if _, _, err := b.cfg.Store.DeleteGracefully(db.Namespaces, "", "leaving", 0); err != nil {
		t.Fatal(err)
	}
	// "leaving" has no spec.finalizers here, so it is simply gone.
	r := b.NewRecorder(corev1.EventSource{Component: "kubelet"})
	for _, ns := range []string{"default", "leaving", "missing"} {
		r.Event(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}}, corev1.EventTypeNormal, "Started", "x")
	}
	b.flush()
	var got []string
	for _, ev := range listEvents(t, b) {
		got = append(got, ev.Namespace)
	}
	if diff := cmp.Diff([]string{"default"}, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestRunWritesEvents(t *testing.T) {
	b, _ := newTestBroadcaster(t, Config{}, "default")
	ctx, cancel := context.WithCancel(context.Background())
	w, err := b.cfg.Store.Watch(ctx, db.Events, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- b.Run(ctx) }()
	b.NewRecorder(corev1.EventSource{Component: "job-controller"}).Event(testJob(), corev1.EventTypeNormal, "Completed", "Job completed")
	select {
	case ev := <-w.Events():
		if got := ev.Object.(*corev1.Event).Reason; got != "Completed" {
			t.Errorf("reason %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event written")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// lingerClock is a fake clock that tells when Run starts a wait.
type lingerClock struct {
	*clocktesting.FakeClock
	waits chan time.Duration
}

func (c lingerClock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.waits <- d
	return ch
}

// TestRunLingers: an event that finds the queue empty waits Linger for
// the events recorded meanwhile, and all go in one write.
func TestRunLingers(t *testing.T) {
	const linger = 100 * time.Millisecond
	b, fake := newTestBroadcaster(t, Config{Linger: linger}, "default")
	clock := lingerClock{FakeClock: fake, waits: make(chan time.Duration, 1)}
	b.cfg.Clock = clock
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	rec := b.NewRecorder(corev1.EventSource{Component: "kubelet"})
	rec.Event(testJob(), corev1.EventTypeNormal, "Pulled", "Container image already present on machine")
	select {
	case d := <-clock.waits:
		if d != linger {
			t.Fatalf("Run waited %v, want the linger %v", d, linger)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not wait before writing")
	}
	rec.Event(testJob(), corev1.EventTypeNormal, "Created", "Created container: main")
	if got := listEvents(t, b); len(got) != 0 {
		t.Fatalf("%d events written while lingering", len(got))
	}
	fake.Step(linger)
	// Both in the write that ends the linger: a second write would wait
	// for a second step, which never comes.
	deadline := time.Now().Add(10 * time.Second)
	for len(listEvents(t, b)) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("events written after the linger: %d, want 2", len(listEvents(t, b)))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
