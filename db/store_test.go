package db

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestCreate(t *testing.T) {
	created := metav1.NewTime(time.Date(2020, 1, 2, 3, 4, 5, 0, time.Local))
	cases := map[string]struct {
		existing []*corev1.Pod
		pod      *corev1.Pod
		wantErr  error
		check    func(t *testing.T, got *corev1.Pod)
	}{
		"named": {
			pod: newPod("ns", "p", nil),
			check: func(t *testing.T, got *corev1.Pod) {
				if got.UID == "" || got.CreationTimestamp.IsZero() {
					t.Errorf("uid %q, creationTimestamp %v: want both set", got.UID, got.CreationTimestamp)
				}
				if diff := cmp.Diff([]any{"p", int64(1), "1"}, []any{got.Name, got.Generation, got.ResourceVersion}); diff != "" {
					t.Errorf("name, generation, resourceVersion (-want +got):\n%s", diff)
				}
			},
		},
		"preset uid, timestamp and generation are kept": {
			pod: func() *corev1.Pod {
				p := newPod("ns", "p", nil)
				p.UID, p.CreationTimestamp, p.Generation = "preset", created, 7
				return p
			}(),
			check: func(t *testing.T, got *corev1.Pod) {
				if diff := cmp.Diff([]any{types.UID("preset"), created.Unix(), int64(7)},
					[]any{got.UID, got.CreationTimestamp.Unix(), got.Generation}); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			},
		},
		"generateName": {
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "job-a-"}},
			check: func(t *testing.T, got *corev1.Pod) {
				suffix, ok := strings.CutPrefix(got.Name, "job-a-")
				if !ok || len(suffix) != 5 || strings.Trim(suffix, "bcdfghjklmnpqrstvwxz2456789") != "" {
					t.Errorf("name %q: want job-a- and 5 chars of the alphabet", got.Name)
				}
			},
		},
		"long generateName is cut to 58": {
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: strings.Repeat("a", 70)}},
			check: func(t *testing.T, got *corev1.Pod) {
				if len(got.Name) != 63 || !strings.HasPrefix(got.Name, strings.Repeat("a", 58)) {
					t.Errorf("name %q: want 58 a's and 5 random chars", got.Name)
				}
			},
		},
		"duplicate name": {
			existing: []*corev1.Pod{newPod("ns", "p", nil)},
			pod:      newPod("ns", "p", nil),
			wantErr:  ErrAlreadyExists,
		},
		"same name in another namespace": {
			existing: []*corev1.Pod{newPod("other", "p", nil)},
			pod:      newPod("ns", "p", nil),
			check:    func(t *testing.T, got *corev1.Pod) {},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			for _, p := range tc.existing {
				mustCreate(t, s, Pods, p)
			}
			err := s.Create(Pods, tc.pod)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Create: got error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			got := mustGetPod(t, s, tc.pod.Namespace, tc.pod.Name)
			if diff := cmp.Diff(tc.pod, got); diff != "" {
				t.Errorf("stored object differs from the created one (-created +stored):\n%s", diff)
			}
			tc.check(t, got)
		})
	}
}

func TestCreateRejectsBadKeys(t *testing.T) {
	cases := map[string]*corev1.Pod{
		"no namespace":             newPod("", "p", nil),
		"no name nor generateName": newPod("ns", "", nil),
		"NUL in name":              newPod("ns", "a\x00b", nil),
	}
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			if err := s.Create(Pods, pod); err == nil {
				t.Fatal("Create succeeded, want an error")
			}
			if got := s.ResourceVersion(); got != 0 {
				t.Errorf("ResourceVersion = %d after a refused create, want 0", got)
			}
		})
	}
}

func TestGet(t *testing.T) {
	s, _ := openStore(t)
	mustCreate(t, s, Pods, newPod("ns", "p", map[string]string{"a": "1"}))

	got := mustGetPod(t, s, "ns", "p")
	got.Labels["a"] = "changed" // a caller's copy: the store must not see it
	if again := mustGetPod(t, s, "ns", "p"); again.Labels["a"] != "1" {
		t.Errorf("label a = %q after mutating a returned copy, want 1", again.Labels["a"])
	}
	if got.APIVersion != "" || got.Kind != "" {
		t.Errorf("TypeMeta = %+v, want empty", got.TypeMeta)
	}

	for name, key := range map[string][2]string{
		"missing name":      {"ns", "q"},
		"missing namespace": {"other", "p"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Get(Pods, key[0], key[1]); !errors.Is(err, ErrNotFound) {
				t.Errorf("Get: got %v, want ErrNotFound", err)
			}
		})
	}
	if _, err := s.Get(Jobs, "ns", "p"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of a never-written resource: got %v, want ErrNotFound", err)
	}
}

func TestList(t *testing.T) {
	s, _ := openStore(t)
	for _, p := range []*corev1.Pod{
		newPod("b", "w", map[string]string{"app": "web"}),
		newPod("a-b", "z", map[string]string{"app": "db"}),
		newPod("a", "y", map[string]string{"app": "web", "tier": "front"}),
		newPod("a", "x", nil),
	} {
		mustCreate(t, s, Pods, p)
	}
	mustCreate(t, s, Jobs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "j"}})

	cases := map[string]struct {
		namespace string
		selector  string
		want      []string
	}{
		"all namespaces":             {want: []string{"a/x", "a/y", "a-b/z", "b/w"}},
		"one namespace, not a-b":     {namespace: "a", want: []string{"a/x", "a/y"}},
		"namespace with a dash":      {namespace: "a-b", want: []string{"a-b/z"}},
		"empty namespace":            {namespace: "none", want: []string{}},
		"equality selector":          {selector: "app=web", want: []string{"a/y", "b/w"}},
		"inequality selector":        {selector: "app!=web", want: []string{"a/x", "a-b/z"}},
		"set selector and namespace": {namespace: "a", selector: "app in (web,db),tier", want: []string{"a/y"}},
		"exists selector":            {selector: "app", want: []string{"a/y", "a-b/z", "b/w"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var sel labels.Selector
			if tc.selector != "" {
				var err error
				if sel, err = labels.Parse(tc.selector); err != nil {
					t.Fatal(err)
				}
			}
			objs, rv, err := s.List(Pods, tc.namespace, sel)
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if diff := cmp.Diff(tc.want, names(objs)); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if rv != 5 {
				t.Errorf("list resourceVersion = %d, want 5", rv)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	deleting := metav1.NewTime(time.Now().Add(time.Hour).Truncate(time.Second))
	cases := map[string]struct {
		stored  func(p *corev1.Pod)                         // applied before the create
		change  func(p *corev1.Pod)                         // applied to the read object before the update
		wantErr error                                       // from Update
		wantRV  string                                      // resourceVersion on the updated object
		check   func(t *testing.T, s *Store, p *corev1.Pod) // after the update
	}{
		"matching resourceVersion": {
			change: func(p *corev1.Pod) { p.Labels = map[string]string{"x": "y"} },
			wantRV: "2",
			check: func(t *testing.T, s *Store, _ *corev1.Pod) {
				if got := mustGetPod(t, s, "ns", "p").Labels["x"]; got != "y" {
					t.Errorf("label x = %q, want y", got)
				}
			},
		},
		"stale resourceVersion": {
			change:  func(p *corev1.Pod) { p.ResourceVersion = "7"; p.Labels = map[string]string{"x": "y"} },
			wantErr: ErrConflict,
		},
		"unconditional": {
			change: func(p *corev1.Pod) { p.ResourceVersion = ""; p.Labels = map[string]string{"x": "y"} },
			wantRV: "2",
		},
		"other uid": {
			change:  func(p *corev1.Pod) { p.UID = "someone-else"; p.Labels = map[string]string{"x": "y"} },
			wantErr: ErrConflict,
		},
		"not found": {
			change:  func(p *corev1.Pod) { p.Name = "q" },
			wantErr: ErrNotFound,
		},
		"uid and creationTimestamp are kept": {
			change: func(p *corev1.Pod) {
				p.UID, p.CreationTimestamp, p.Labels = "", metav1.Time{}, map[string]string{"x": "y"}
			},
			wantRV: "2",
			check: func(t *testing.T, s *Store, p *corev1.Pod) {
				got := mustGetPod(t, s, "ns", "p")
				if got.UID == "" || got.CreationTimestamp.IsZero() || got.UID != p.UID {
					t.Errorf("uid %q (returned %q), creationTimestamp %v: want kept", got.UID, p.UID, got.CreationTimestamp)
				}
			},
		},
		"no change stores nothing": {
			change: func(p *corev1.Pod) {},
			wantRV: "1",
			check: func(t *testing.T, s *Store, _ *corev1.Pod) {
				if rv := s.ResourceVersion(); rv != 1 {
					t.Errorf("store resourceVersion = %d, want 1", rv)
				}
			},
		},
		"deletionTimestamp cannot be removed": {
			stored: func(p *corev1.Pod) {
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleting, ptr.To[int64](30)
			},
			change: func(p *corev1.Pod) {
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = nil, nil
				p.Labels = map[string]string{"x": "y"}
			},
			wantRV: "2",
			check: func(t *testing.T, s *Store, _ *corev1.Pod) {
				got := mustGetPod(t, s, "ns", "p")
				if got.DeletionTimestamp == nil || !got.DeletionTimestamp.Equal(&deleting) ||
					got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 30 {
					t.Errorf("deletionTimestamp %v, grace %v: want kept", got.DeletionTimestamp, got.DeletionGracePeriodSeconds)
				}
			},
		},
		"finalizer rule: last finalizer removed at grace 0 deletes": {
			stored: func(p *corev1.Pod) {
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleting, ptr.To[int64](0)
				p.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
			},
			change: func(p *corev1.Pod) { p.Finalizers = nil },
			wantRV: "2",
			check:  wantGone,
		},
		"finalizer rule: grace lowered to 0 deletes": {
			stored: func(p *corev1.Pod) {
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleting, ptr.To[int64](30)
			},
			change: func(p *corev1.Pod) { p.DeletionGracePeriodSeconds = ptr.To[int64](0) },
			wantRV: "2",
			check:  wantGone,
		},
		"finalizer rule: finalizers left keep it": {
			stored: func(p *corev1.Pod) {
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleting, ptr.To[int64](0)
				p.Finalizers = []string{"a", "b"}
			},
			change: func(p *corev1.Pod) { p.Finalizers = []string{"b"} },
			wantRV: "2",
			check:  wantPresent,
		},
		"finalizer rule: grace period left keeps it": {
			stored: func(p *corev1.Pod) {
				p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &deleting, ptr.To[int64](30)
				p.Finalizers = []string{"a"}
			},
			change: func(p *corev1.Pod) { p.Finalizers = nil },
			wantRV: "2",
			check:  wantPresent,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			p := newPod("ns", "p", nil)
			if tc.stored != nil {
				tc.stored(p)
			}
			mustCreate(t, s, Pods, p)
			p = mustGetPod(t, s, "ns", "p")
			tc.change(p)
			err := s.Update(Pods, p)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Update: got error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				if rv := s.ResourceVersion(); rv != 1 {
					t.Errorf("store resourceVersion = %d after a failed update, want 1", rv)
				}
				return
			}
			if p.ResourceVersion != tc.wantRV {
				t.Errorf("resourceVersion = %q, want %q", p.ResourceVersion, tc.wantRV)
			}
			if tc.check != nil {
				tc.check(t, s, p)
			}
		})
	}
}

func wantGone(t *testing.T, s *Store, _ *corev1.Pod) {
	t.Helper()
	if _, err := s.Get(Pods, "ns", "p"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after the update: got %v, want ErrNotFound", err)
	}
}

func wantPresent(t *testing.T, s *Store, _ *corev1.Pod) {
	t.Helper()
	if _, err := s.Get(Pods, "ns", "p"); err != nil {
		t.Errorf("Get after the update: %v, want the object", err)
	}
}

func TestDelete(t *testing.T) {
	s, _ := openStore(t)
	mustCreate(t, s, Pods, newPod("ns", "p", map[string]string{"a": "1"}))
	got, err := s.Delete(Pods, "ns", "p")
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if diff := cmp.Diff([]string{"p", "1", "2"}, []string{got.GetName(), got.GetLabels()["a"], got.GetResourceVersion()}); diff != "" {
		t.Errorf("deleted object: name, label, resourceVersion (-want +got):\n%s", diff)
	}
	if _, err := s.Get(Pods, "ns", "p"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: got %v, want ErrNotFound", err)
	}
	if _, err := s.Delete(Pods, "ns", "p"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete: got %v, want ErrNotFound", err)
	}
}

func TestDeleteGracefully(t *testing.T) {
	start := time.Now().Truncate(time.Second)
	type state struct {
		Deleted bool
		Grace   *int64
		// Deadline is deletionTimestamp minus start, rounded to seconds.
		Deadline   *int64
		Generation int64
		RV         uint64 // the store's
	}
	cases := map[string]struct {
		finalizers []string
		graces     []int64 // DeleteGracefully calls in order
		want       state   // after the last one
	}{
		"grace 0 without finalizers deletes now": {
			graces: []int64{0},
			want:   state{Deleted: true, RV: 2},
		},
		"grace 0 with finalizers marks it": {
			finalizers: []string{"f"},
			graces:     []int64{0},
			want:       state{Grace: ptr.To[int64](0), Deadline: ptr.To[int64](0), Generation: 1, RV: 2},
		},
		"grace 30 marks it and bumps generation": {
			graces: []int64{30},
			want:   state{Grace: ptr.To[int64](30), Deadline: ptr.To[int64](30), Generation: 2, RV: 2},
		},
		"shorter grace moves the deadline back": {
			graces: []int64{30, 10},
			want:   state{Grace: ptr.To[int64](10), Deadline: ptr.To[int64](10), Generation: 2, RV: 3},
		},
		"longer grace changes nothing": {
			graces: []int64{30, 60},
			want:   state{Grace: ptr.To[int64](30), Deadline: ptr.To[int64](30), Generation: 2, RV: 2},
		},
		"shortened to 0 deletes": {
			graces: []int64{30, 0},
			want:   state{Deleted: true, RV: 3},
		},
		"shortened to 0 with finalizers waits": {
			finalizers: []string{"f"},
			graces:     []int64{30, 0},
			want:       state{Grace: ptr.To[int64](0), Deadline: ptr.To[int64](0), Generation: 2, RV: 3},
		},
		"again at 0 with finalizers changes nothing": {
			finalizers: []string{"f"},
			graces:     []int64{0, 0},
			want:       state{Grace: ptr.To[int64](0), Deadline: ptr.To[int64](0), Generation: 1, RV: 2},
		},
		"negative grace counts as 1": {
			graces: []int64{-5},
			want:   state{Grace: ptr.To[int64](1), Deadline: ptr.To[int64](1), Generation: 2, RV: 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			p := newPod("ns", "p", nil)
			p.Finalizers = tc.finalizers
			mustCreate(t, s, Pods, p)
			var (
				obj     Object
				deleted bool
				err     error
			)
			for _, g := range tc.graces {
				if obj, deleted, err = s.DeleteGracefully(Pods, "ns", "p", g); err != nil {
					t.Fatalf("DeleteGracefully(%d): %v", g, err)
				}
			}
			got := state{Deleted: deleted, RV: s.ResourceVersion()}
			if !deleted {
				stored := mustGetPod(t, s, "ns", "p")
				if diff := cmp.Diff(obj, Object(stored)); diff != "" {
					t.Errorf("returned object differs from the stored one (-returned +stored):\n%s", diff)
				}
				got.Grace, got.Generation = stored.DeletionGracePeriodSeconds, stored.Generation
				if ts := stored.DeletionTimestamp; ts != nil {
					got.Deadline = ptr.To(int64(ts.Sub(start).Round(time.Second) / time.Second))
					// The store stamps whole seconds: a second that ticked
					// during the test may add up to that much to the deadline.
					slack := int64(time.Now().Truncate(time.Second).Sub(start) / time.Second)
					if tc.want.Deadline != nil && *got.Deadline >= *tc.want.Deadline && *got.Deadline <= *tc.want.Deadline+slack {
						got.Deadline = tc.want.Deadline
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFinalizerRemovalCompletesGracefulDelete(t *testing.T) {
	s, _ := openStore(t)
	p := newPod("ns", "p", nil)
	p.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	mustCreate(t, s, Pods, p)
	if _, deleted, err := s.DeleteGracefully(Pods, "ns", "p", 0); err != nil || deleted {
		t.Fatalf("DeleteGracefully: deleted %v, err %v; want marked only", deleted, err)
	}
	got, err := s.Modify(Pods, "ns", "p", func(obj Object) error {
		obj.SetFinalizers(nil)
		return nil
	})
	if err != nil {
		t.Fatalf("Modify: %v", err)
	}
	if got.GetResourceVersion() != "3" {
		t.Errorf("resourceVersion = %q, want the deletion's 3", got.GetResourceVersion())
	}
	wantGone(t, s, nil)
}

func TestModify(t *testing.T) {
	errBoom := errors.New("boom")
	cases := map[string]struct {
		name    string
		fn      func(obj Object) error
		wantErr error
		wantRV  string // of the returned object
		storeRV uint64
		label   string // stored label "a"
	}{
		"writes the change": {
			fn:      func(obj Object) error { obj.SetLabels(map[string]string{"a": "2"}); return nil },
			wantRV:  "2",
			storeRV: 2,
			label:   "2",
		},
		"ErrUnchanged skips the write and returns the stored object": {
			fn:      func(obj Object) error { obj.SetLabels(map[string]string{"a": "2"}); return ErrUnchanged },
			wantRV:  "1",
			storeRV: 1,
			label:   "1",
		},
		"a wrapped ErrUnchanged too": {
			fn:      func(obj Object) error { return errors.Join(errors.New("nothing to do"), ErrUnchanged) },
			wantRV:  "1",
			storeRV: 1,
			label:   "1",
		},
		"callback error aborts": {
			fn:      func(obj Object) error { obj.SetLabels(map[string]string{"a": "2"}); return errBoom },
			wantErr: errBoom,
			storeRV: 1,
			label:   "1",
		},
		"not found": {
			name:    "q",
			fn:      func(obj Object) error { t.Error("fn called for a missing object"); return nil },
			wantErr: ErrNotFound,
			storeRV: 1,
			label:   "1",
		},
		"renaming is refused": {
			fn:      func(obj Object) error { obj.SetName("other"); return nil },
			wantErr: errAny,
			storeRV: 1,
			label:   "1",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			mustCreate(t, s, Pods, newPod("ns", "p", map[string]string{"a": "1"}))
			target := "p"
			if tc.name != "" {
				target = tc.name
			}
			got, err := s.Modify(Pods, "ns", target, tc.fn)
			switch {
			case tc.wantErr == errAny && err == nil, tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Fatalf("Modify: got error %v, want %v", err, tc.wantErr)
			case tc.wantErr == nil && got.GetResourceVersion() != tc.wantRV:
				t.Errorf("returned resourceVersion %q, want %q", got.GetResourceVersion(), tc.wantRV)
			case tc.wantErr == nil && got.GetLabels()["a"] != tc.label:
				t.Errorf("returned label a = %q, want %q", got.GetLabels()["a"], tc.label)
			}
			if rv := s.ResourceVersion(); rv != tc.storeRV {
				t.Errorf("store resourceVersion = %d, want %d", rv, tc.storeRV)
			}
			if l := mustGetPod(t, s, "ns", "p").Labels["a"]; l != tc.label {
				t.Errorf("stored label a = %q, want %q", l, tc.label)
			}
		})
	}
}

// errAny in a table means "some error, of no particular class".
var errAny = errors.New("any error")

func TestWriteIsAtomic(t *testing.T) {
	s, _ := openStore(t)
	errStop := errors.New("stop")
	err := s.Write(func(tx *Tx) error {
		if err := tx.Create(Pods, newPod("ns", "a", nil)); err != nil {
			return err
		}
		if err := tx.Create(Pods, newPod("ns", "b", nil)); err != nil {
			return err
		}
		return errStop
	})
	if !errors.Is(err, errStop) {
		t.Fatalf("Write: got %v, want errStop", err)
	}
	if objs, rv, _ := s.List(Pods, "", nil); len(objs) != 0 || rv != 0 {
		t.Fatalf("after a failed Write: %d objects, resourceVersion %d; want none, 0", len(objs), rv)
	}

	var rvs []string
	err = s.Write(func(tx *Tx) error {
		for _, n := range []string{"a", "b"} {
			p := newPod("ns", n, nil)
			if err := tx.Create(Pods, p); err != nil {
				return err
			}
			rvs = append(rvs, p.ResourceVersion)
		}
		got, err := tx.Get(Pods, "ns", "a") // a write sees its own changes
		if err != nil {
			return err
		}
		rvs = append(rvs, got.GetResourceVersion())
		return nil
	})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if diff := cmp.Diff([]string{"1", "2", "1"}, rvs); diff != "" {
		t.Errorf("resourceVersions (-want +got):\n%s", diff)
	}
}

func TestResourceVersionSurvivesReopen(t *testing.T) {
	s, path := openStore(t)
	for _, n := range []string{"a", "b", "c"} {
		mustCreate(t, s, Pods, newPod("ns", n, nil))
	}
	if _, err := s.Delete(Pods, "ns", "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := s.Get(Pods, "ns", "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("Get on a closed store: got %v, want ErrClosed", err)
	}
	if err := s.Create(Pods, newPod("ns", "d", nil)); !errors.Is(err, ErrClosed) {
		t.Errorf("Create on a closed store: got %v, want ErrClosed", err)
	}

	s2, err := Open(path)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	defer s2.Close()
	if rv := s2.ResourceVersion(); rv != 4 {
		t.Errorf("ResourceVersion after reopen = %d, want 4", rv)
	}
	p := newPod("ns", "d", nil)
	mustCreate(t, s2, Pods, p)
	if p.ResourceVersion != "5" {
		t.Errorf("first resourceVersion after reopen = %q, want 5", p.ResourceVersion)
	}
	if got := mustGetPod(t, s2, "ns", "a"); got.ResourceVersion != "1" {
		t.Errorf("a's resourceVersion = %q, want 1", got.ResourceVersion)
	}
}
