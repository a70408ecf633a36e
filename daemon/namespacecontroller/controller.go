// Package namespacecontroller does what kube-apiserver's system-namespaces
// controller and kube-controller-manager's namespace controller do: it
// creates the system namespaces (at start, and again every minute those
// that are gone), and empties a namespace marked for
// deletion (its CronJobs, Jobs, Pods, Events, and Services with their endpoints)
// before removing the "kubernetes" finalizer that lets it go. It talks
// only to the store, and runs on package controller's skeleton.
package namespacecontroller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// SystemNamespaces exist from the start, as in a Kubernetes cluster.
var SystemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// EnsureSystemNamespaces creates the system namespaces that do not exist.
func EnsureSystemNamespaces(store *db.Store) error {
	return store.Write(func(tx *db.Tx) error {
		for _, name := range SystemNamespaces {
			_, err := tx.Get(db.Namespaces, "", name)
			if err == nil {
				continue
			}
			if !errors.Is(err, db.ErrNotFound) {
				return err
			}
			if err := tx.Create(db.Namespaces, newNamespace(name)); err != nil {
				return fmt.Errorf("creating namespace %s: %w", name, err)
			}
		}
		return nil
	})
}

// keepSystemNamespaces creates the system namespaces that are gone every
// interval until ctx ends, as kube-apiserver's system namespaces
// controller does.
func keepSystemNamespaces(ctx context.Context, store *db.Store, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := EnsureSystemNamespaces(store); errors.Is(err, db.ErrClosed) {
				return err
			} else if err != nil {
				logrus.WithError(err).Error("creating the system namespaces")
			}
		}
	}
}

// newNamespace is an Active namespace as kube-apiserver creates one.
func newNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

// DefaultSystemNamespacesInterval is how often kube-apiserver creates
// again the system namespaces that are gone (kube-node-lease, the one of
// them that may be deleted).
const DefaultSystemNamespacesInterval = time.Minute

// DefaultResync is how often a namespace still being emptied is looked at
// again even if no deletion in it was seen.
const DefaultResync = 5 * time.Second

// Config configures the namespace controller.
type Config struct {
	Store *db.Store
	// Resync is how often a namespace still being emptied is looked at
	// again even if no deletion in it was seen; 0 = DefaultResync.
	Resync time.Duration
	// SystemNamespacesInterval is how often the system namespaces that are
	// gone are created again; 0 = DefaultSystemNamespacesInterval.
	SystemNamespacesInterval time.Duration
}

// Controller empties terminating namespaces. Create it with New, start it
// with Run.
type Controller struct {
	store  *db.Store
	resync time.Duration
	loop   *controller.Loop[string] // keys: namespace names
}

// New returns a namespace controller; zero Config fields take their
// defaults.
func New(cfg Config) *Controller {
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.SystemNamespacesInterval <= 0 {
		cfg.SystemNamespacesInterval = DefaultSystemNamespacesInterval
	}
	c := &Controller{store: cfg.Store, resync: cfg.Resync}
	watches := []controller.Watch{{Resource: db.Namespaces, OnEvent: c.onNamespaceEvent}}
	for _, r := range []db.Resource{db.CronJobs, db.Jobs, db.Pods, db.Services} {
		watches = append(watches, controller.Watch{Resource: r, OnEvent: c.onContentEvent})
	}
	c.loop = controller.New(controller.Config[string]{Name: "namespace", Store: cfg.Store, Watches: watches, Sync: c.sync,
		Tasks: []func(context.Context) error{func(ctx context.Context) error {
			return keepSystemNamespaces(ctx, cfg.Store, cfg.SystemNamespacesInterval)
		}}})
	return c
}

// Run watches namespaces, and the deletions of what they hold, until ctx
// ends (nil) or the store closes.
func (c *Controller) Run(ctx context.Context) error {
	return c.loop.Run(ctx)
}

// onNamespaceEvent queues a namespace marked for deletion.
func (c *Controller) onNamespaceEvent(ev db.Event) {
	if ev.Type != watch.Deleted && ev.Object.GetDeletionTimestamp() != nil {
		c.loop.Add(ev.Object.GetName())
	}
}

// onContentEvent queues the namespace of a deleted object: it may be the
// last one a terminating namespace waited for.
func (c *Controller) onContentEvent(ev db.Event) {
	if ev.Type == watch.Deleted {
		c.loop.Add(ev.Object.GetNamespace())
	}
}

// sync empties a terminating namespace and, while something in it remains,
// looks at it again after the resync period.
func (c *Controller) sync(_ context.Context, ns string) error {
	if c.isTerminating(ns) && !c.finalize(ns) {
		c.loop.AddAfter(ns, c.resync)
	}
	return nil
}

func (c *Controller) isTerminating(name string) bool {
	obj, err := c.store.Get(db.Namespaces, "", name)
	return err == nil && obj.GetDeletionTimestamp() != nil
}

// finalize deletes what namespace ns holds and, once nothing is left,
// removes its "kubernetes" finalizer, and reports whether it is done.
func (c *Controller) finalize(ns string) bool {
	log := logrus.WithField("namespace", ns)
	var left int
	err := c.store.Write(func(tx *db.Tx) error {
		obj, err := tx.Get(db.Namespaces, "", ns)
		if errors.Is(err, db.ErrNotFound) {
			return nil
		}
		if err != nil || obj.GetDeletionTimestamp() == nil {
			return err
		}
		if left, err = deleteContent(tx, ns); err != nil || left > 0 {
			return err
		}
		namespace := obj.(*corev1.Namespace)
		namespace.Spec.Finalizers = slices.DeleteFunc(namespace.Spec.Finalizers, func(f corev1.FinalizerName) bool {
			return f == corev1.FinalizerKubernetes
		})
		return tx.Update(db.Namespaces, namespace)
	})
	if err != nil {
		log.WithError(err).Error("emptying namespace")
		return false
	}
	if left > 0 {
		log.WithField("remaining", left).Debug("namespace not empty yet")
		return false
	}
	log.Info("namespace emptied")
	return true
}

// deleteContent deletes the CronJobs, Jobs, Pods, Events, Services, Endpoints,
// EndpointSlices, ConfigMaps, Secrets, ServiceAccounts, Roles and RoleBindings of ns, as the namespace controller's deletecollection
// calls do: Pods gracefully (their containers are stopped first), the rest
// at once. It returns how many objects remain.
func deleteContent(tx *db.Tx, ns string) (int, error) {
	left := 0
	for _, r := range []db.Resource{db.CronJobs, db.Jobs, db.Pods, db.Events, db.Services, db.Endpoints, db.EndpointSlices, db.ConfigMaps, db.Secrets,
		db.ServiceAccounts, db.Roles, db.RoleBindings, db.PodTemplates, db.Leases} {
		objs, err := tx.List(r, ns, nil)
		if err != nil {
			return 0, err
		}
		for _, obj := range objs {
			_, deleted, err := tx.DeleteGracefully(r, ns, obj.GetName(), kube.DeletionGrace(obj, nil))
			if err != nil {
				return 0, fmt.Errorf("deleting %s %s/%s: %w", r.Name, ns, obj.GetName(), err)
			}
			if !deleted {
				left++
			}
		}
	}
	return left, nil
}
