package podworker

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// groupTest is a store of pods p0…p(n-1) and a groupWriter on it that
// counts its transactions.
type groupTest struct {
	store  *db.Store
	g      *groupWriter
	writes atomic.Int32
}

func newGroupTest(t *testing.T, n int) *groupTest {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}}
		if err := store.Create(db.Pods, pod); err != nil {
			t.Fatal(err)
		}
	}
	gt := &groupTest{store: store}
	gt.g = &groupWriter{write: func(fn func(*db.Tx) error) error {
		gt.writes.Add(1)
		return store.Write(fn)
	}}
	return gt
}

// label is a write that sets label k=v.
func label(k, v string) func(db.Object) error {
	return func(obj db.Object) error {
		obj.SetLabels(map[string]string{k: v})
		return nil
	}
}

type groupResult struct {
	obj db.Object
	err error
}

// grouped runs first alone, holding its transaction open until every one
// of others has queued behind it, then lets them all go; results are
// others' outcomes in order.
func (gt *groupTest) grouped(t *testing.T, first string, others map[string]func(db.Object) error, order []string) []groupResult {
	t.Helper()
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := gt.g.modify(db.Pods, "ns", first, func(obj db.Object) error {
			<-release
			return label("first", "yes")(obj)
		})
		if err != nil {
			t.Errorf("first write: %v", err)
		}
	}()
	waitPending(t, gt.g, 0, true)
	results := make([]groupResult, len(order))
	for i, name := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			obj, err := gt.g.modify(db.Pods, "ns", name, others[name])
			results[i] = groupResult{obj, err}
		}()
	}
	waitPending(t, gt.g, len(order), true)
	close(release)
	wg.Wait()
	return results
}

// waitPending waits until n writes queue behind a busy leader.
func waitPending(t *testing.T, g *groupWriter, n int, busy bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		got, gotBusy := len(g.pending), g.busy
		g.mu.Unlock()
		if got == n && gotBusy == busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending writes: %d (busy %v), want %d (busy %v)", got, gotBusy, n, busy)
		}
		time.Sleep(time.Millisecond)
	}
}

func (gt *groupTest) labels(t *testing.T, name string) map[string]string {
	t.Helper()
	obj, err := gt.store.Get(db.Pods, "ns", name)
	if err != nil {
		t.Fatal(err)
	}
	return obj.GetLabels()
}

func TestGroupWriterCommitsQueuedWritesTogether(t *testing.T) {
	gt := newGroupTest(t, 5)
	others := map[string]func(db.Object) error{}
	order := []string{"p1", "p2", "p3", "p4"}
	for _, name := range order {
		others[name] = label("by", name)
	}
	results := gt.grouped(t, "p0", others, order)
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("%s: %v", order[i], r.err)
		}
		if r.obj.GetLabels()["by"] != order[i] || r.obj.GetResourceVersion() == "" {
			t.Errorf("%s: returned %v rv %q", order[i], r.obj.GetLabels(), r.obj.GetResourceVersion())
		}
		if got := gt.labels(t, order[i]); got["by"] != order[i] {
			t.Errorf("%s stored with labels %v", order[i], got)
		}
	}
	if got := gt.writes.Load(); got != 2 {
		t.Errorf("transactions: %d, want 2 (the first write, then the four queued behind it)", got)
	}
	waitPending(t, gt.g, 0, false)
}

func TestGroupWriterKeepsEachWritesOwnOutcome(t *testing.T) {
	gt := newGroupTest(t, 5)
	results := gt.grouped(t, "p0", map[string]func(db.Object) error{
		"p1":      label("by", "p1"),
		"p2":      func(db.Object) error { return errPodGone },
		"p3":      func(obj db.Object) error { obj.SetLabels(map[string]string{"dropped": "yes"}); return db.ErrUnchanged },
		"missing": label("by", "missing"),
		"p4":      label("by", "p4"),
	}, []string{"p1", "p2", "p3", "missing", "p4"})
	if results[0].err != nil || results[4].err != nil {
		t.Fatalf("writes beside refused ones failed: %v, %v", results[0].err, results[4].err)
	}
	if !errors.Is(results[1].err, errPodGone) {
		t.Errorf("callback's own error: %v", results[1].err)
	}
	if results[2].err != nil || results[2].obj.GetLabels()["dropped"] != "" {
		t.Errorf("unchanged write: %v, returned %v (want what is stored)", results[2].err, results[2].obj.GetLabels())
	}
	if !errors.Is(results[3].err, db.ErrNotFound) {
		t.Errorf("write to a missing object: %v", results[3].err)
	}
	for _, name := range []string{"p1", "p4"} {
		if got := gt.labels(t, name); got["by"] != name {
			t.Errorf("%s stored with labels %v", name, got)
		}
	}
	if got := gt.labels(t, "p3"); got["dropped"] != "" {
		t.Errorf("unchanged write stored: %v", got)
	}
}

func TestGroupWriterRetriesAloneWhenTheGroupFails(t *testing.T) {
	gt := newGroupTest(t, 4)
	results := gt.grouped(t, "p0", map[string]func(db.Object) error{
		"p1": label("by", "p1"),
		"p2": func(obj db.Object) error { obj.SetResourceVersion("1"); return label("by", "p2")(obj) }, // stale: a conflict
		"p3": label("by", "p3"),
	}, []string{"p1", "p2", "p3"})
	if !errors.Is(results[1].err, db.ErrConflict) {
		t.Errorf("conflicting write: %v, want a conflict", results[1].err)
	}
	for i, name := range []string{"p1", "p3"} {
		if err := results[i*2].err; err != nil {
			t.Errorf("%s failed with its group: %v", name, err)
		}
		if got := gt.labels(t, name); got["by"] != name {
			t.Errorf("%s stored with labels %v", name, got)
		}
	}
	if got := gt.labels(t, "p2"); got["by"] != "" {
		t.Errorf("conflicting write stored: %v", got)
	}
	// the first alone, the failed group, then the three again one by one
	if got := gt.writes.Load(); got != 5 {
		t.Errorf("transactions: %d, want 5", got)
	}
}
