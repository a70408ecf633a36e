package db

import (
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReconcile runs callbacks through Store.Reconcile while the writer is
// held by someone else: one that changes nothing must return without
// waiting for it, one that changes something must wait and commit.
func TestReconcile(t *testing.T) {
	errBoom := errors.New("boom")
	cases := map[string]struct {
		fn        func(tx *Tx) error
		wantErr   error
		wantRuns  int
		wantWait  bool   // returns only once the writer is free
		wantRV    uint64 // the store's afterwards
		wantLabel string // stored label "a" of ns/p ("" = ns/p is gone)
	}{
		"an update that changes nothing takes no writer": {
			fn: func(tx *Tx) error {
				obj, err := tx.Get(Pods, "ns", "p")
				if err != nil {
					return err
				}
				return tx.Update(Pods, obj)
			},
			wantRuns: 1, wantRV: 1, wantLabel: "1",
		},
		"an error without a change is returned from the read": {
			fn:       func(tx *Tx) error { return errBoom },
			wantErr:  errBoom,
			wantRuns: 1, wantRV: 1, wantLabel: "1",
		},
		"a change runs again in a write": {
			fn: func(tx *Tx) error {
				obj, err := tx.Get(Pods, "ns", "p")
				if err != nil {
					return err
				}
				obj.SetLabels(map[string]string{"a": "2"})
				return tx.Update(Pods, obj)
			},
			wantRuns: 2, wantWait: true, wantRV: 2, wantLabel: "2",
		},
		"a change whose error the callback ignores is still written": {
			fn: func(tx *Tx) error {
				_ = tx.Create(Pods, newPod("ns", "q", nil))
				return nil
			},
			wantRuns: 2, wantWait: true, wantRV: 2, wantLabel: "1",
		},
		"a create in a resource never stored runs again in a write": {
			fn: func(tx *Tx) error {
				return tx.Create(Jobs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"}})
			},
			wantRuns: 2, wantWait: true, wantRV: 2, wantLabel: "1",
		},
		"a delete runs again in a write": {
			fn: func(tx *Tx) error {
				_, err := tx.Delete(Pods, "ns", "p")
				return err
			},
			wantRuns: 2, wantWait: true, wantRV: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			mustCreate(t, s, Pods, newPod("ns", "p", map[string]string{"a": "1"}))
			runs := 0
			done := make(chan error, 1)
			s.writeMu.Lock()
			go func() {
				done <- s.Reconcile(func(tx *Tx) error { runs++; return tc.fn(tx) })
			}()
			var err error
			select {
			case err = <-done:
				if tc.wantWait {
					t.Fatal("Reconcile returned while the writer was held")
				}
				s.writeMu.Unlock()
			case <-time.After(200 * time.Millisecond):
				if !tc.wantWait {
					s.writeMu.Unlock()
					t.Fatal("Reconcile waited for the writer")
				}
				s.writeMu.Unlock()
				err = <-done
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Reconcile: got error %v, want %v", err, tc.wantErr)
			}
			if runs != tc.wantRuns {
				t.Errorf("callback ran %d times, want %d", runs, tc.wantRuns)
			}
			if rv := s.ResourceVersion(); rv != tc.wantRV {
				t.Errorf("store resourceVersion = %d, want %d", rv, tc.wantRV)
			}
			label := ""
			if obj, err := s.Get(Pods, "ns", "p"); err == nil {
				label = obj.GetLabels()["a"]
			} else if !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get: %v", err)
			}
			if label != tc.wantLabel {
				t.Errorf("stored label a = %q, want %q", label, tc.wantLabel)
			}
		})
	}
}
