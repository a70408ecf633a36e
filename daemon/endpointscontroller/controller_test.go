package endpointscontroller

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// run starts a controller over store until the test ends.
func run(t *testing.T, store *db.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(Config{Store: store}).Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readyIPs are the ready addresses of the Service's Endpoints and slices.
func readyIPs(t *testing.T, store *db.Store, name string) (endpoints, slices []string, err error) {
	obj, err := store.Get(db.Endpoints, "default", name)
	if err != nil {
		return nil, nil, err
	}
	for _, ss := range obj.(*corev1.Endpoints).Subsets {
		for _, a := range ss.Addresses {
			endpoints = append(endpoints, a.IP)
		}
	}
	objs, _, err := store.List(db.EndpointSlices, "default", nil)
	if err != nil {
		return nil, nil, err
	}
	for _, o := range objs {
		s := o.(*discoveryv1.EndpointSlice)
		if s.Labels[discoveryv1.LabelServiceName] != name {
			continue
		}
		for _, ep := range s.Endpoints {
			if *ep.Conditions.Ready {
				slices = append(slices, ep.Addresses...)
			}
		}
	}
	return endpoints, slices, nil
}

func hasReady(t *testing.T, store *db.Store, name string, want ...string) func() bool {
	return func() bool {
		ep, sl, err := readyIPs(t, store, name)
		return err == nil && equalStrings(ep, want) && equalStrings(sl, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func setReady(t *testing.T, store *db.Store, name string, ready bool) {
	t.Helper()
	_, err := store.Modify(db.Pods, "default", name, func(o db.Object) error {
		p := o.(*corev1.Pod)
		p.Status.Conditions = testPod(name, p.Status.PodIP, ready).Status.Conditions
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestControllerFollowsPodsAndServices(t *testing.T) {
	store := openStore(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.Create(db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}))
	must(store.Create(db.Pods, testPod("a", "10.88.0.2", true)))
	must(store.Create(db.Pods, testPod("b", "10.88.0.3", false)))
	must(store.Create(db.Services, testService()))
	run(t, store)
	waitFor(t, "the ready pod in endpoints", hasReady(t, store, "web", "10.88.0.2"))

	setReady(t, store, "b", true)
	waitFor(t, "both pods ready", hasReady(t, store, "web", "10.88.0.2", "10.88.0.3"))
	_, err := store.Modify(db.Pods, "default", "a", func(o db.Object) error {
		o.SetLabels(map[string]string{"app": "other"})
		return nil
	})
	must(err)
	waitFor(t, "the relabelled pod gone", hasReady(t, store, "web", "10.88.0.3"))
	_, err = store.Delete(db.Pods, "default", "b")
	must(err)
	waitFor(t, "no endpoints", hasReady(t, store, "web"))

	// Someone else's change to a managed slice is undone.
	objs, _, err := store.List(db.EndpointSlices, "default", nil)
	must(err)
	if len(objs) != 1 {
		t.Fatalf("%d slices, want the placeholder", len(objs))
	}
	_, err = store.Delete(db.EndpointSlices, "default", objs[0].GetName())
	must(err)
	waitFor(t, "the placeholder back", func() bool {
		objs, _, err := store.List(db.EndpointSlices, "default", nil)
		return err == nil && len(objs) == 1
	})

	// A foreground deletion removes the slices, then the Service.
	must(store.Create(db.Pods, testPod("c", "10.88.0.4", true)))
	waitFor(t, "the new pod", hasReady(t, store, "web", "10.88.0.4"))
	_, err = store.Modify(db.Services, "default", "web", func(o db.Object) error {
		o.SetFinalizers([]string{metav1.FinalizerDeleteDependents})
		o.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		return nil
	})
	must(err)
	waitFor(t, "service, endpoints and slices gone", func() bool {
		_, errS := store.Get(db.Services, "default", "web")
		_, errE := store.Get(db.Endpoints, "default", "web")
		slices, _, err := store.List(db.EndpointSlices, "default", nil)
		return errors.Is(errS, db.ErrNotFound) && errors.Is(errE, db.ErrNotFound) && err == nil && len(slices) == 0
	})
}

func TestControllerLeavesSelectorlessServicesAlone(t *testing.T) {
	store := openStore(t)
	svc := testService(func(s *corev1.Service) { s.Name, s.Spec.Selector = "ext", nil })
	if err := store.Create(db.Services, svc); err != nil {
		t.Fatal(err)
	}
	mine := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "default"},
		Subsets: []corev1.EndpointSubset{{Addresses: addrs("192.0.2.10")}}}
	if err := store.Create(db.Endpoints, mine); err != nil {
		t.Fatal(err)
	}
	if err := store.Create(db.Services, testService()); err != nil {
		t.Fatal(err)
	}
	run(t, store)
	waitFor(t, "web's endpoints", hasReady(t, store, "web"))
	obj, err := store.Get(db.Endpoints, "default", "ext")
	if err != nil || obj.GetResourceVersion() != mine.ResourceVersion {
		t.Errorf("client's Endpoints changed: %v %+v", err, obj)
	}
	// Deleting the Service deletes its Endpoints, as kube's controller does.
	if _, err := store.Delete(db.Services, "default", "ext"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ext's endpoints gone", func() bool {
		_, err := store.Get(db.Endpoints, "default", "ext")
		return errors.Is(err, db.ErrNotFound)
	})
}
