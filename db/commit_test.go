package db

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/bbolt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sharedCommit runs fns as concurrent Writes that share one commit: a
// first Write holds the writer while each of fns is queued, in order,
// behind it. It returns each fn's Write result (a panic is returned as
// the value it panicked with).
func sharedCommit(t *testing.T, s *Store, fns ...func(tx *Tx) error) []any {
	t.Helper()
	hold, holding := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.Write(func(tx *Tx) error {
			close(holding)
			<-hold
			return nil // changes nothing: not even the holder commits
		})
	}()
	<-holding
	results := make([]chan any, len(fns))
	for i, fn := range fns {
		results[i] = make(chan any, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					results[i] <- p
				}
			}()
			results[i] <- s.Write(fn)
		}()
		waitQueued(t, s, i+1)
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatalf("holding Write: %v", err)
	}
	out := make([]any, len(fns))
	for i := range results {
		select {
		case out[i] = <-results[i]:
		case <-time.After(10 * time.Second):
			t.Fatalf("Write %d did not return", i)
		}
	}
	return out
}

// waitQueued waits until n Writes wait for the next commit.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.queueMu.Lock()
		queued := len(s.queue)
		s.queueMu.Unlock()
		if queued == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Writes queued, want %d", queued, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// commitCount is how many commits the store's metrics have seen.
func commitCount(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "etcd_disk_backend_commit_duration_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("no commit metric")
	return 0
}

func TestConcurrentWritesShareACommit(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, _ := openStore(t, WithMetrics(reg))
	w, err := s.Watch(context.Background(), Pods, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var fns []func(tx *Tx) error
	for _, name := range []string{"a", "b", "c", "d"} {
		fns = append(fns, func(tx *Tx) error { return tx.Create(Pods, newPod("ns", name, nil)) })
	}
	for i, res := range sharedCommit(t, s, fns...) {
		if res != nil {
			t.Errorf("Write %d: %v", i, res)
		}
	}
	if got := commitCount(t, reg); got != 1 {
		t.Errorf("four concurrent Writes made %d commits, want 1", got)
	}
	want := []summary{{"ADDED", "ns/a", 1}, {"ADDED", "ns/b", 2}, {"ADDED", "ns/c", 3}, {"ADDED", "ns/d", 4}}
	if diff := cmp.Diff(want, summarize(receive(t, w, 4))); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if rv := s.ResourceVersion(); rv != 4 {
		t.Errorf("ResourceVersion = %d, want 4", rv)
	}
}

func TestSharedCommitUndoesAFailedWrite(t *testing.T) {
	s, path := openStore(t)
	mustCreate(t, s, Pods, newPod("ns", "kept", nil)) // rv 1
	errStop := errors.New("stop")
	var seen string
	results := sharedCommit(t, s,
		func(tx *Tx) error { return tx.Create(Pods, newPod("ns", "a", nil)) }, // rv 2
		func(tx *Tx) error { // fails after changing pods and making a bucket: all undone
			a, err := tx.Get(Pods, "ns", "a")
			if err != nil {
				return err
			}
			a.SetLabels(map[string]string{"by": "failed"})
			if err := tx.Update(Pods, a); err != nil {
				return err
			}
			if _, err := tx.Delete(Pods, "ns", "kept"); err != nil {
				return err
			}
			if err := tx.Create(Pods, newPod("ns", "b", nil)); err != nil {
				return err
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
			if err := tx.Create(ConfigMaps, cm); err != nil {
				return err
			}
			return errStop
		},
		func(tx *Tx) error { // panics after a change: undone, panics in its caller
			if err := tx.Create(Pods, newPod("ns", "p", nil)); err != nil {
				return err
			}
			panic("boom")
		},
		func(tx *Tx) error { // sees a as the first Write left it
			a, err := tx.Get(Pods, "ns", "a")
			if err != nil {
				return err
			}
			seen = a.GetResourceVersion() + " " + a.GetLabels()["by"]
			a.SetLabels(map[string]string{"by": "last"})
			return tx.Update(Pods, a) // rv 3
		},
	)
	if results[0] != nil || results[3] != nil {
		t.Errorf("the other Writes failed: %v, %v", results[0], results[3])
	}
	if err, _ := results[1].(error); !errors.Is(err, errStop) {
		t.Errorf("failed Write returned %v, want its own error", results[1])
	}
	if results[2] != "boom" {
		t.Errorf("panicking Write: got %v, want its panic", results[2])
	}
	if seen != "2 " {
		t.Errorf("the last Write saw a at %q, want resourceVersion 2 without the failed Write's label", seen)
	}

	check := func(s *Store) {
		t.Helper()
		objs, rv, err := s.List(Pods, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"ns/a", "ns/kept"}, names(objs)); diff != "" || rv != 3 {
			t.Errorf("pods (-want +got):\n%s; resourceVersion %d, want 3", diff, rv)
		}
		// The change log holds exactly the committed changes: an
		// undone one would show in a replay or in a list as of rv 2.
		replayed, err := s.replay(Pods, 0, 3)
		if err != nil {
			t.Fatal(err)
		}
		want := []summary{{"ADDED", "ns/kept", 1}, {"ADDED", "ns/a", 2}, {"MODIFIED", "ns/a", 3}}
		if diff := cmp.Diff(want, summarize(replayed)); diff != "" {
			t.Errorf("replayed changes (-want +got):\n%s", diff)
		}
		at2, _, err := s.ListAt(Pods, "", nil, 2)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"ns/a", "ns/kept"}, names(at2)); diff != "" || len(at2) > 0 && at2[0].GetLabels()["by"] != "" {
			t.Errorf("pods as of rv 2 (-want +got):\n%s; a's labels %v, want none", diff, at2[0].GetLabels())
		}
		err = s.db.View(func(btx *bbolt.Tx) error {
			if btx.Bucket(bucketObjects).Bucket([]byte(ConfigMaps.Name)) != nil {
				t.Error("the failed Write's new bucket was committed")
			}
			if n := btx.Bucket(bucketChanges).Stats().KeyN; n != 3 {
				t.Errorf("change log holds %d entries, want 3", n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	check(reopened)
}

func TestSharedCommitOfNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, _ := openStore(t, WithMetrics(reg))
	errStop := errors.New("stop")
	results := sharedCommit(t, s,
		func(tx *Tx) error { return nil },
		func(tx *Tx) error {
			if err := tx.Create(Pods, newPod("ns", "a", nil)); err != nil {
				return err
			}
			return errStop
		},
	)
	if results[0] != nil {
		t.Errorf("a Write that changed nothing: %v", results[0])
	}
	if err, _ := results[1].(error); !errors.Is(err, errStop) {
		t.Errorf("failed Write returned %v, want its own error", results[1])
	}
	if got := commitCount(t, reg); got != 0 {
		t.Errorf("%d commits, want none: nothing was written", got)
	}
	if rv := s.ResourceVersion(); rv != 0 {
		t.Errorf("ResourceVersion = %d, want 0", rv)
	}
}

func TestWritesQueuedAtCloseFail(t *testing.T) {
	s, _ := openStore(t)
	hold, holding := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.Write(func(tx *Tx) error {
			close(holding)
			<-hold
			return tx.Create(Pods, newPod("ns", "first", nil))
		})
	}()
	<-holding
	queued := make(chan error, 1)
	go func() { queued <- s.Create(Pods, newPod("ns", "queued", nil)) }()
	waitQueued(t, s, 1)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	close(hold)
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-queued:
		// It either made the commit before Close or found the store closed.
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Errorf("queued Write: %v, want nil or ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a Write queued at Close never returned")
	}
}
