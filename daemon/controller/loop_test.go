package controller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/db"
)

func openStore(t *testing.T, opts ...db.Option) *db.Store {
	t.Helper()
	s, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"), opts...)
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

func mustCreate(t *testing.T, s *db.Store, objs ...db.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := s.Create(db.Pods, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
}

// start runs l until the test ends, and returns a stop that cancels it and
// returns what Run returned.
func start[K comparable](t *testing.T, l *Loop[K]) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// waitFor polls cond until it holds, failing the test after 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// log records what a test's handlers and syncs saw, in order.
type log struct {
	mu    sync.Mutex
	lines []string
}

func (l *log) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *log) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func (l *log) has(line string) func() bool {
	return func() bool { return slices.Contains(l.get(), line) }
}

func TestRunListsEveryWatchBeforeSyncing(t *testing.T) {
	s := openStore(t)
	mustCreate(t, s, newPod("a"))
	if err := s.Create(db.Services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"}}); err != nil {
		t.Fatal(err)
	}
	var seen log
	var l *Loop[string]
	l = New(Config[string]{
		Store: s,
		Watches: []Watch{
			{Resource: db.Pods, OnList: func(objs []db.Object) {
				for _, o := range objs {
					seen.add("list pod %s", o.GetName())
					l.Add(o.GetName())
				}
			}, OnEvent: func(ev db.Event) { seen.add("%s pod %s", ev.Type, ev.Object.GetName()) }},
			{Resource: db.Services, OnEvent: func(ev db.Event) { seen.add("%s service %s", ev.Type, ev.Object.GetName()) }},
		},
		Sync: func(_ context.Context, k string) error { seen.add("sync %s", k); return nil },
	})
	stop := start(t, l)
	waitFor(t, "the sync", seen.has("sync a"))
	mustCreate(t, s, newPod("b"))
	waitFor(t, "the new pod", seen.has("ADDED pod b"))
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	want := []string{"list pod a", "ADDED service svc", "sync a", "ADDED pod b"}
	if diff := cmp.Diff(want, seen.get()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFailedSyncIsRetriedWithBackoff(t *testing.T) {
	s := openStore(t)
	clk := clocktesting.NewFakeClock(t0)
	var syncs log
	fail := 2
	l := New(Config[string]{
		Store: s,
		Clock: clk,
		Sync: func(_ context.Context, k string) error {
			syncs.add("sync %s at %v", k, clk.Since(t0))
			if fail > 0 {
				fail--
				return errors.New("transient")
			}
			return nil
		},
	})
	l.Add("a")
	start(t, l)
	for _, d := range []time.Duration{DefaultRetryBase, 2 * DefaultRetryBase} {
		waitFor(t, "the retry's timer", clk.HasWaiters)
		clk.Step(d)
	}
	want := []string{"sync a at 0s", "sync a at 10ms", "sync a at 30ms"}
	waitFor(t, "the third sync", syncs.has(want[2]))
	if diff := cmp.Diff(want, syncs.get()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if clk.HasWaiters() {
		t.Errorf("a retry is armed after a successful sync")
	}
}

func TestAKeyIsNeverSyncedTwiceAtOnce(t *testing.T) {
	s := openStore(t)
	entered := make(chan string)
	release := make(chan struct{})
	var mu sync.Mutex
	running := map[string]bool{}
	var overlaps int
	l := New(Config[string]{
		Store:   s,
		Workers: 4,
		Sync: func(_ context.Context, k string) error {
			mu.Lock()
			if running[k] {
				overlaps++
			}
			running[k] = true
			mu.Unlock()
			entered <- k
			<-release
			mu.Lock()
			running[k] = false
			mu.Unlock()
			return nil
		},
	})
	start(t, l)
	l.Add("a")
	<-entered
	l.Add("a") // while "a" syncs: once more, after
	l.Add("a")
	l.Add("b")
	if k := <-entered; k != "b" {
		t.Fatalf("second sync of %q, want b while a still syncs", k)
	}
	release <- struct{}{} // a
	release <- struct{}{} // b
	if k := <-entered; k != "a" {
		t.Fatalf("third sync of %q, want a again", k)
	}
	release <- struct{}{}
	select {
	case k := <-entered:
		t.Fatalf("%q synced again, want a's two adds folded into one sync", k)
	case <-time.After(100 * time.Millisecond):
	}
	mu.Lock()
	defer mu.Unlock()
	if overlaps != 0 {
		t.Errorf("%d syncs of a key overlapped", overlaps)
	}
}

func TestRunWaitsForWhatItStarted(t *testing.T) {
	s := openStore(t)
	syncing := make(chan struct{})
	var finished, taskEnded bool
	l := New(Config[string]{
		Store: s,
		Sync: func(ctx context.Context, _ string) error {
			close(syncing)
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // a sync finishing its write
			finished = true
			return nil
		},
		Tasks: []func(context.Context) error{func(ctx context.Context) error {
			<-ctx.Done()
			taskEnded = true
			return nil
		}},
	})
	l.Add("a")
	l.Add("b")
	stop := start(t, l)
	<-syncing
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if !finished || !taskEnded {
		t.Errorf("Run returned before the sync (%t) and the task (%t) ended", finished, taskEnded)
	}
}

func TestRunEndsWithTheStoreOrATask(t *testing.T) {
	cases := map[string]struct {
		task func(context.Context) error
		stop func(*db.Store)
		want error
	}{
		"store closed": {stop: func(s *db.Store) { s.Close() }, want: db.ErrClosed},
		"task failed":  {task: func(context.Context) error { return errBoom }, want: errBoom},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := openStore(t)
			listed := make(chan struct{})
			cfg := Config[string]{Store: s, Watches: []Watch{{Resource: db.Pods,
				OnList: func([]db.Object) { close(listed) }, OnEvent: func(db.Event) {}}}}
			if tc.task != nil {
				cfg.Tasks = append(cfg.Tasks, tc.task)
			}
			done := make(chan error, 1)
			go func() { done <- New(cfg).Run(context.Background()) }()
			if tc.stop != nil {
				<-listed
				tc.stop(s)
			}
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Errorf("Run = %v, want %v", err, tc.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return")
			}
		})
	}
}

var errBoom = errors.New("boom")

func TestRunFailsOnAFailedList(t *testing.T) {
	s := openStore(t)
	s.Close()
	err := New(Config[string]{Store: s, Watches: []Watch{{Resource: db.Pods, OnEvent: func(db.Event) {}}}}).Run(context.Background())
	if !errors.Is(err, db.ErrClosed) {
		t.Errorf("Run = %v, want ErrClosed", err)
	}
}

// TestRunEndedBeforeItsListIsNoError: a controller stopped while it waits
// for its turn to list (or during the list) ended because ctx did, which
// Run reports as nil, not as the list's failure.
func TestRunEndedBeforeItsListIsNoError(t *testing.T) {
	s := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 { // the turn and the list race: try both orders
		err := New(Config[string]{Store: s, Watches: []Watch{{Resource: db.Pods, OnEvent: func(db.Event) {}}}}).Run(ctx)
		if err != nil {
			t.Fatalf("Run with its context ended = %v, want nil", err)
		}
	}
}
