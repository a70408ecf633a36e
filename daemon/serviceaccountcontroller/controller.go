// Package serviceaccountcontroller does what kube-controller-manager's
// serviceaccount and root-ca-cert-publisher controllers do: every active
// namespace has a "default" ServiceAccount and a "kube-root-ca.crt"
// ConfigMap holding the CA bundle pods verify the API with; both are
// created with the namespace and made again when deleted (the ConfigMap
// also when its content is changed). It talks only to the store, and runs
// on package controller's skeleton.
package serviceaccountcontroller

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// descriptionAnnotation is what kube's root-ca-cert-publisher says about
// the ConfigMap it writes.
const (
	descriptionAnnotation = "kubernetes.io/description"
	description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints " +
		"such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Config configures the controller.
type Config struct {
	Store *db.Store
	// CABundle is the PEM the API's serving certificate verifies against
	// (pki.PKI.CABundle), written as kube-root-ca.crt's ca.crt.
	CABundle []byte
}

// Controller keeps the default ServiceAccount and the root CA ConfigMap of
// every namespace. Create it with New, start it with Run.
type Controller struct {
	store  *db.Store
	bundle string
	loop   *controller.Loop[string] // keys: namespace names
}

// New returns the controller.
func New(cfg Config) *Controller {
	c := &Controller{store: cfg.Store, bundle: string(cfg.CABundle)}
	c.loop = controller.New(controller.Config[string]{
		Name:  "serviceaccount",
		Store: cfg.Store,
		Watches: []controller.Watch{
			{Resource: db.Namespaces, OnEvent: c.onNamespace},
			{Resource: db.ServiceAccounts, OnEvent: c.onServiceAccount},
			{Resource: db.ConfigMaps, OnEvent: c.onConfigMap},
		},
		Sync: c.sync,
	})
	return c
}

// Run keeps the namespaces' defaults until ctx ends (nil) or the store
// closes.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// onNamespace queues a namespace that exists (created, or listed at start).
func (c *Controller) onNamespace(ev db.Event) {
	if ev.Type != watch.Deleted && ev.Object.GetDeletionTimestamp() == nil {
		c.loop.Add(ev.Object.GetName())
	}
}

// onServiceAccount queues the namespace of a deleted default account.
func (c *Controller) onServiceAccount(ev db.Event) {
	if ev.Type == watch.Deleted && ev.Object.GetName() == kube.DefaultServiceAccountName {
		c.loop.Add(ev.Object.GetNamespace())
	}
}

// onConfigMap queues the namespace of a root CA ConfigMap that was deleted
// or changed.
func (c *Controller) onConfigMap(ev db.Event) {
	if ev.Object.GetName() != kube.RootCAConfigMap {
		return
	}
	if ev.Type == watch.Deleted || ev.Object.(*corev1.ConfigMap).Data[kube.RootCAKey] != c.bundle {
		c.loop.Add(ev.Object.GetNamespace())
	}
}

// sync creates what an active namespace lacks, in one transaction.
func (c *Controller) sync(_ context.Context, ns string) error {
	return c.store.Write(func(tx *db.Tx) error {
		namespace, err := db.Find[*corev1.Namespace](tx, db.Namespaces, "", ns)
		if err != nil || namespace == nil || namespace.DeletionTimestamp != nil {
			return err
		}
		if err := ensureServiceAccount(tx, ns); err != nil {
			return fmt.Errorf("default service account of %s: %w", ns, err)
		}
		if err := c.ensureRootCA(tx, ns); err != nil {
			return fmt.Errorf("%s of %s: %w", kube.RootCAConfigMap, ns, err)
		}
		return nil
	})
}

// ensureServiceAccount creates the namespace's default ServiceAccount if
// it is missing.
func ensureServiceAccount(tx *db.Tx, ns string) error {
	_, err := tx.Get(db.ServiceAccounts, ns, kube.DefaultServiceAccountName)
	if !errors.Is(err, db.ErrNotFound) {
		return err
	}
	return tx.Create(db.ServiceAccounts, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kube.DefaultServiceAccountName}})
}

// ensureRootCA creates the namespace's root CA ConfigMap, or puts back its
// content and annotation, as the root-ca-cert-publisher does.
func (c *Controller) ensureRootCA(tx *db.Tx, ns string) error {
	data := map[string]string{kube.RootCAKey: c.bundle}
	cm, err := db.Find[*corev1.ConfigMap](tx, db.ConfigMaps, ns, kube.RootCAConfigMap)
	switch {
	case err != nil:
		return err
	case cm == nil:
		return tx.Create(db.ConfigMaps, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: kube.RootCAConfigMap,
				Annotations: map[string]string{descriptionAnnotation: description}},
			Data: data,
		})
	case maps.Equal(cm.Data, data) && len(cm.BinaryData) == 0 && cm.Annotations[descriptionAnnotation] == description:
		return nil
	}
	cm.Data, cm.BinaryData = data, nil
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[descriptionAnnotation] = description
	return tx.Update(db.ConfigMaps, cm)
}
