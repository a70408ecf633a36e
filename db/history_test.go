package db

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/bbolt"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// listed is an object as a list shows it: key, resourceVersion and labels.
type listed struct {
	Key    string
	RV     string
	Labels map[string]string
}

func listedOf(objs []Object) []listed {
	out := []listed{}
	for _, o := range objs {
		out = append(out, listed{describeKey(o.GetNamespace(), o.GetName()), o.GetResourceVersion(), o.GetLabels()})
	}
	return out
}

func TestListAtReconstructsEveryPastState(t *testing.T) {
	s, _ := openStore(t)
	setLabel := func(ns, name, v string) func() error {
		return func() error {
			_, err := s.Modify(Pods, ns, name, func(obj Object) error {
				obj.SetLabels(map[string]string{"v": v})
				return nil
			})
			return err
		}
	}
	steps := []func() error{
		func() error { return s.Create(Pods, newPod("ns", "a", map[string]string{"v": "1"})) },
		func() error { return s.Create(Pods, newPod("ns", "b", nil)) },
		func() error { return s.Create(Pods, newPod("other", "a", nil)) },
		func() error {
			return s.Create(Jobs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"}})
		},
		setLabel("ns", "a", "2"),
		func() error { _, err := s.Delete(Pods, "ns", "b"); return err },
		setLabel("ns", "a", "3"),
		func() error { return s.Create(Pods, newPod("ns", "b", map[string]string{"v": "again"})) },
		func() error {
			// Two changes in one transaction.
			return s.Write(func(tx *Tx) error {
				if _, err := tx.Delete(Pods, "ns", "a"); err != nil {
					return err
				}
				return tx.Create(Pods, newPod("ns", "c", nil))
			})
		},
	}
	type snapshot struct {
		rv               uint64
		all, ns, labeled []listed
	}
	sel := labels.SelectorFromSet(labels.Set{"v": "2"})
	var snaps []snapshot
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		all, rv, err := s.List(Pods, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		ns, _, _ := s.List(Pods, "ns", nil)
		lab, _, _ := s.List(Pods, "", sel)
		snaps = append(snaps, snapshot{rv, listedOf(all), listedOf(ns), listedOf(lab)})
	}
	for _, snap := range snaps {
		for name, got := range map[string]struct {
			ns   string
			sel  labels.Selector
			want []listed
		}{
			"all":     {"", nil, snap.all},
			"ns":      {"ns", nil, snap.ns},
			"labeled": {"", sel, snap.labeled},
		} {
			objs, rv, err := s.ListAt(Pods, got.ns, got.sel, snap.rv)
			if err != nil {
				t.Fatalf("ListAt(%d) %s: %v", snap.rv, name, err)
			}
			if rv != snap.rv {
				t.Errorf("ListAt(%d) %s: listed at %d", snap.rv, name, rv)
			}
			if diff := cmp.Diff(got.want, listedOf(objs)); diff != "" {
				t.Errorf("ListAt(%d) %s (-want +got):\n%s", snap.rv, name, diff)
			}
			// The same list undecoded, the newest state included (ListAt
			// reads that one through List).
			stored, _, err := s.ListStoredAt(Pods, got.ns, got.sel, snap.rv)
			if err != nil {
				t.Fatalf("ListStoredAt(%d) %s: %v", snap.rv, name, err)
			}
			decoded := []Object{}
			for _, st := range stored {
				obj, err := st.Decode(Pods)
				if err != nil {
					t.Fatal(err)
				}
				if obj.GetNamespace() != st.Namespace || obj.GetName() != st.Name {
					t.Errorf("ListStoredAt(%d) %s: %s/%s holds %s/%s", snap.rv, name, st.Namespace, st.Name, obj.GetNamespace(), obj.GetName())
				}
				decoded = append(decoded, obj)
			}
			if diff := cmp.Diff(got.want, listedOf(decoded)); diff != "" {
				t.Errorf("ListStoredAt(%d) %s (-want +got):\n%s", snap.rv, name, diff)
			}
		}
	}
}

func TestListAtLimits(t *testing.T) {
	s, _ := openStore(t, WithChangeLogSize(3))
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		mustCreate(t, s, Pods, newPod("ns", name, nil))
	}
	// The log holds changes 3, 4 and 5: the state at 2 can be rebuilt, not 1.
	tests := map[string]struct {
		rv      uint64
		want    []string
		wantErr error
	}{
		"oldest reachable": {rv: 2, want: []string{"ns/a", "ns/b"}},
		"compacted":        {rv: 1, wantErr: ErrExpired},
		"newest":           {rv: 5, want: []string{"ns/a", "ns/b", "ns/c", "ns/d", "ns/e"}},
		"newest by zero":   {rv: 0, want: []string{"ns/a", "ns/b", "ns/c", "ns/d", "ns/e"}},
		"future":           {rv: 6, wantErr: ErrTooNew},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs, _, err := s.ListAt(Pods, "", nil, tc.rv)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ListAt(%d): error %v, want %v", tc.rv, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, names(objs)); err == nil && diff != "" {
				t.Errorf("ListAt(%d) (-want +got):\n%s", tc.rv, diff)
			}
		})
	}
}

func TestListAtRefusesChangesWithoutHistory(t *testing.T) {
	s, _ := openStore(t)
	mustCreate(t, s, Pods, newPod("ns", "a", nil))
	// A change logged in the old format, which did not keep the replaced value.
	if err := s.db.Update(func(btx *bbolt.Tx) error {
		return btx.Bucket(bucketChanges).Put(u64(1), []byte("ADDED pods\n{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\"}}"))
	}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, Pods, newPod("ns", "b", nil))
	if _, _, err := s.ListAt(Pods, "", nil, 1); err != nil {
		t.Errorf("ListAt(1) past only new-format changes: %v", err)
	}
	if err := s.Read(func(tx *Tx) error {
		_, err := tx.undoAfter(Pods, "", 0)
		return err
	}); !errors.Is(err, ErrExpired) {
		t.Errorf("undoing an old-format change: %v, want ErrExpired", err)
	}
}

func TestSplitChangeValue(t *testing.T) {
	tests := map[string]struct {
		value   string
		want    change
		wantErr bool
	}{
		"added":      {value: "ADDED pods 0\n{}", want: change{typ: watch.Added, resource: "pods", data: []byte("{}"), prevKnown: true}},
		"modified":   {value: "MODIFIED jobs 3\nabc{}", want: change{typ: watch.Modified, resource: "jobs", data: []byte("{}"), prev: []byte("abc"), prevKnown: true}},
		"old format": {value: "DELETED pods\n{}", want: change{typ: watch.Deleted, resource: "pods", data: []byte("{}")}},
		"no header":  {value: "{}", wantErr: true},
		"bad length": {value: "ADDED pods 9\n{}", wantErr: true},
		"negative":   {value: "ADDED pods -1\n{}", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := splitChangeValue([]byte(tc.value))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(change{})); err == nil && diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWaitFor(t *testing.T) {
	s, _ := openStore(t)
	mustCreate(t, s, Pods, newPod("ns", "a", nil))
	if err := s.WaitFor(context.Background(), 1); err != nil {
		t.Errorf("WaitFor a committed version: %v", err)
	}
	done := make(chan error)
	go func() { done <- s.WaitFor(context.Background(), 2) }()
	mustCreate(t, s, Pods, newPod("ns", "b", nil))
	if err := <-done; err != nil {
		t.Errorf("WaitFor the next version: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := s.WaitFor(ctx, 100); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitFor a version never written: %v, want the context's error", err)
	}
	go func() { done <- s.WaitFor(context.Background(), 100) }()
	_ = s.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("WaitFor across Close: %v, want ErrClosed", err)
	}
}

func TestGetOfAnImpossibleKeyIsNotFound(t *testing.T) {
	s, _ := openStore(t)
	if _, err := s.Get(Pods, "ns", "a\x00b"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a name with NUL: %v, want ErrNotFound", err)
	}
}
