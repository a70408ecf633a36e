package db

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

func TestWatchDeliversInOrder(t *testing.T) {
	s, _ := openStore(t)
	w, err := s.Watch(context.Background(), Pods, 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()

	mustCreate(t, s, Pods, newPod("ns", "a", nil))
	mustCreate(t, s, Jobs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"}})
	if _, err := s.Modify(Pods, "ns", "a", func(obj Object) error {
		obj.SetLabels(map[string]string{"x": "y"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(func(tx *Tx) error {
		if err := tx.Create(Pods, newPod("other", "b", nil)); err != nil {
			return err
		}
		_, err := tx.Delete(Pods, "ns", "a")
		return err
	}); err != nil {
		t.Fatal(err)
	}

	got := receive(t, w, 4)
	want := []summary{
		{"ADDED", "ns/a", 1},
		{"MODIFIED", "ns/a", 3},
		{"ADDED", "other/b", 4},
		{"DELETED", "ns/a", 5},
	}
	if diff := cmp.Diff(want, summarize(got)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, ev := range got {
		if ev.Object.GetResourceVersion() != formatRV(ev.RV) {
			t.Errorf("%s event: object resourceVersion %q, event RV %d", ev.Type, ev.Object.GetResourceVersion(), ev.RV)
		}
	}
	if got[3].Object.GetLabels()["x"] != "y" {
		t.Errorf("Deleted event carries labels %v, want the last state", got[3].Object.GetLabels())
	}
}

func TestWatchersGetTheirOwnCopies(t *testing.T) {
	s, _ := openStore(t)
	w1, _ := s.Watch(context.Background(), Pods, 0)
	w2, _ := s.Watch(context.Background(), Pods, 0)
	defer w1.Stop()
	defer w2.Stop()
	mustCreate(t, s, Pods, newPod("ns", "a", nil))
	e1, e2 := receive(t, w1, 1)[0], receive(t, w2, 1)[0]
	if e1.Object == e2.Object {
		t.Fatal("two watchers got the same object pointer")
	}
	e1.Object.SetName("mutated")
	if e2.Object.GetName() != "a" {
		t.Errorf("second watcher sees name %q, want a", e2.Object.GetName())
	}
}

func TestWatchReplaysFromResourceVersion(t *testing.T) {
	cases := map[string]struct {
		since uint64
		want  []summary // after 4 changes, then one live change (RV 5)
	}{
		"from the middle": {since: 2, want: []summary{{"MODIFIED", "ns/a", 3}, {"DELETED", "ns/b", 4}, {"ADDED", "ns/c", 5}}},
		"from the start":  {since: 1, want: []summary{{"ADDED", "ns/b", 2}, {"MODIFIED", "ns/a", 3}, {"DELETED", "ns/b", 4}, {"ADDED", "ns/c", 5}}},
		"from the end":    {since: 4, want: []summary{{"ADDED", "ns/c", 5}}},
		"from now":        {since: 0, want: []summary{{"ADDED", "ns/c", 5}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			mustCreate(t, s, Pods, newPod("ns", "a", nil))
			mustCreate(t, s, Pods, newPod("ns", "b", nil))
			if _, err := s.Modify(Pods, "ns", "a", func(obj Object) error {
				obj.SetLabels(map[string]string{"x": "y"})
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Delete(Pods, "ns", "b"); err != nil {
				t.Fatal(err)
			}
			w, err := s.Watch(context.Background(), Pods, tc.since)
			if err != nil {
				t.Fatalf("Watch(%d): %v", tc.since, err)
			}
			defer w.Stop()
			mustCreate(t, s, Pods, newPod("ns", "c", nil))
			if diff := cmp.Diff(tc.want, summarize(receive(t, w, len(tc.want)))); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWatchResumesAfterReopen(t *testing.T) {
	s, path := openStore(t)
	mustCreate(t, s, Pods, newPod("ns", "a", nil))
	mustCreate(t, s, Pods, newPod("ns", "b", nil))
	if _, err := s.Delete(Pods, "ns", "a"); err != nil {
		t.Fatal(err)
	}
	w, _ := s.Watch(context.Background(), Pods, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitEnded(t, w); !errors.Is(err, ErrClosed) {
		t.Errorf("watch on a closed store ended with %v, want ErrClosed", err)
	}
	if _, err := s.Watch(context.Background(), Pods, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Watch on a closed store: got %v, want ErrClosed", err)
	}

	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	w2, err := s2.Watch(context.Background(), Pods, 1)
	if err != nil {
		t.Fatalf("Watch after reopen: %v", err)
	}
	defer w2.Stop()
	want := []summary{{"ADDED", "ns/b", 2}, {"DELETED", "ns/a", 3}}
	if diff := cmp.Diff(want, summarize(receive(t, w2, 2))); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestWatchExpiredAfterTrimming(t *testing.T) {
	s, path := openStore(t, WithChangeLogSize(3))
	for i := range 10 {
		mustCreate(t, s, Pods, newPod("ns", fmt.Sprint(i), nil))
	}
	check := func(t *testing.T, s *Store) {
		t.Helper()
		for _, since := range []uint64{1, 6} {
			if _, err := s.Watch(context.Background(), Pods, since); !errors.Is(err, ErrExpired) {
				t.Errorf("Watch(%d): got %v, want ErrExpired", since, err)
			}
		}
		w, err := s.Watch(context.Background(), Pods, 7)
		if err != nil {
			t.Fatalf("Watch(7): %v", err)
		}
		defer w.Stop()
		want := []summary{{"ADDED", "ns/7", 8}, {"ADDED", "ns/8", 9}, {"ADDED", "ns/9", 10}}
		if diff := cmp.Diff(want, summarize(receive(t, w, 3))); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
	}
	check(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path, WithChangeLogSize(3))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	check(t, s2)
	if n := countChanges(t, s2); n != 3 {
		t.Errorf("%d changes retained, want 3", n)
	}
}

func countChanges(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	if err := s.Read(func(tx *Tx) error {
		n = tx.btx.Bucket(bucketChanges).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestListThenWatchHasNoGap lists and watches from the list's
// resourceVersion while writers run, and checks that list + events rebuild
// the final state, with every resourceVersion seen exactly once.
func TestListThenWatchHasNoGap(t *testing.T) {
	s, _ := openStore(t)
	const writers, perWriter = 4, 25
	var wg sync.WaitGroup
	started := make(chan struct{}, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perWriter {
				name := fmt.Sprintf("w%d-%d", i, j%5)
				p := newPod("ns", name, map[string]string{"n": fmt.Sprint(j)})
				err := s.Create(Pods, p)
				if errors.Is(err, ErrAlreadyExists) {
					_, err = s.Modify(Pods, "ns", name, func(obj Object) error {
						if j%3 == 0 {
							obj.SetDeletionTimestamp(&metav1.Time{Time: time.Now()}) // the finalizer rule deletes it
						}
						obj.SetLabels(map[string]string{"n": fmt.Sprint(j)})
						return nil
					})
				}
				if err != nil {
					t.Errorf("writer %d: %v", i, err)
					return
				}
				if j == 2 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range writers {
		<-started // list while everyone is writing
	}
	objs, listRV, err := s.List(Pods, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(context.Background(), Pods, listRV)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	wg.Wait()

	state := map[string]string{}
	for _, o := range objs {
		state[o.GetName()] = o.GetResourceVersion()
	}
	final := s.ResourceVersion()
	var events []Event
	if final > listRV {
		events = receive(t, w, int(final-listRV))
	}
	for i, ev := range events {
		if want := listRV + uint64(i) + 1; ev.RV != want {
			t.Fatalf("event %d has RV %d, want %d (a gap or a duplicate)", i, ev.RV, want)
		}
		if ev.Type == watch.Deleted {
			delete(state, ev.Object.GetName())
		} else {
			state[ev.Object.GetName()] = ev.Object.GetResourceVersion()
		}
	}
	finalObjs, _, err := s.List(Pods, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, o := range finalObjs {
		want[o.GetName()] = o.GetResourceVersion()
	}
	if diff := cmp.Diff(want, state); diff != "" {
		t.Errorf("list + events (+) differ from the final list (-):\n%s", diff)
	}
	select {
	case ev := <-w.Events():
		t.Errorf("unexpected extra event %+v", summarize([]Event{ev}))
	default:
	}
}

func TestSlowWatcherDoesNotBlockWriters(t *testing.T) {
	s, _ := openStore(t, WithWatchQueueLimit(10))
	slow, _ := s.Watch(context.Background(), Pods, 0) // never read
	fast, _ := s.Watch(context.Background(), Pods, 0)
	defer fast.Stop()

	// The reader takes each event before the next write: with a queue of 10 a
	// reader that lagged on a loaded machine would be ended too, which is the
	// rule under test, not a failure of it.
	for i := range 30 {
		mustCreate(t, s, Pods, newPod("ns", fmt.Sprint(i), nil)) // would hang if a watcher blocked it
		if got := receive(t, fast, 1)[0].Object.GetName(); got != fmt.Sprint(i) {
			t.Fatalf("event %d is for pod %q", i, got)
		}
	}
	if err := waitEnded(t, slow); !errors.Is(err, ErrTooSlow) {
		t.Errorf("slow watcher ended with %v, want ErrTooSlow", err)
	}
}

func TestWatchEndsOnStopAndContext(t *testing.T) {
	cases := map[string]func(w *Watcher, cancel context.CancelFunc){
		"Stop":          func(w *Watcher, _ context.CancelFunc) { w.Stop() },
		"context":       func(_ *Watcher, cancel context.CancelFunc) { cancel() },
		"Stop, twice":   func(w *Watcher, _ context.CancelFunc) { w.Stop(); w.Stop() },
		"context, Stop": func(w *Watcher, cancel context.CancelFunc) { cancel(); w.Stop() },
	}
	for name, stop := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w, err := s.Watch(ctx, Pods, 0)
			if err != nil {
				t.Fatal(err)
			}
			stop(w, cancel)
			if err := waitEnded(t, w); err != nil {
				t.Errorf("Err = %v, want nil", err)
			}
			mustCreate(t, s, Pods, newPod("ns", "a", nil)) // publishing to no one
			s.watchMu.Lock()
			n := len(s.watchers)
			s.watchMu.Unlock()
			if n != 0 {
				t.Errorf("%d watchers still registered", n)
			}
		})
	}
}
