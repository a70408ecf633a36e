package serviceaccountcontroller

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

const bundle = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func openStore(t *testing.T) *db.Store {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// run starts the controller on store until the test ends.
func run(t *testing.T, store *db.Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(Config{Store: store, CABundle: []byte(bundle)}).Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// eventually polls cond for up to ten seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func rootCA(store *db.Store, ns string) (*corev1.ConfigMap, bool) {
	obj, err := store.Get(db.ConfigMaps, ns, kube.RootCAConfigMap)
	if err != nil {
		return nil, false
	}
	return obj.(*corev1.ConfigMap), true
}

func TestDefaultsOfEveryActiveNamespace(t *testing.T) {
	store := openStore(t)
	if err := store.Create(db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "before"}}); err != nil {
		t.Fatal(err)
	}
	run(t, store)
	if err := store.Create(db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "after"}}); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"before", "after"} {
		eventually(t, "the defaults of "+ns, func() bool {
			_, err := store.Get(db.ServiceAccounts, ns, "default")
			cm, ok := rootCA(store, ns)
			return err == nil && ok && cm.Data["ca.crt"] == bundle &&
				cm.Annotations["kubernetes.io/description"] != ""
		})
	}

	// Deleted, they come back; changed, the ConfigMap is put back.
	if _, err := store.Delete(db.ServiceAccounts, "after", "default"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the default account to come back", func() bool {
		_, err := store.Get(db.ServiceAccounts, "after", "default")
		return err == nil
	})
	cm, _ := rootCA(store, "before")
	cm.Data["ca.crt"] = "tampered"
	if err := store.Update(db.ConfigMaps, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "ca.crt to be put back", func() bool {
		cm, ok := rootCA(store, "before")
		return ok && cm.Data["ca.crt"] == bundle
	})
}

func TestTerminatingNamespaceGetsNothing(t *testing.T) {
	store := openStore(t)
	now := metav1.Now()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going", Finalizers: []string{"x"}}}
	if err := store.Create(db.Namespaces, ns); err != nil {
		t.Fatal(err)
	}
	obj, _ := store.Get(db.Namespaces, "", "going")
	ns = obj.(*corev1.Namespace)
	ns.DeletionTimestamp = &now
	if err := store.Update(db.Namespaces, ns); err != nil {
		t.Fatal(err)
	}
	if err := store.Create(db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "marker"}}); err != nil {
		t.Fatal(err)
	}
	run(t, store)
	// The marker namespace is synced after "going" (keys in list order).
	eventually(t, "the marker namespace's account", func() bool {
		_, err := store.Get(db.ServiceAccounts, "marker", "default")
		return err == nil
	})
	if _, err := store.Get(db.ServiceAccounts, "going", "default"); !errors.Is(err, db.ErrNotFound) {
		t.Errorf("a terminating namespace got a default account: %v", err)
	}
}
