// Package namespacecontroller does what kube-apiserver's system-namespaces
// controller and kube-controller-manager's namespace controller do: it
// creates the system namespaces, and empties a namespace marked for
// deletion (its CronJobs, Jobs, Pods, Events, and Services with their endpoints)
// before removing the "kubernetes" finalizer that lets it go. It talks
// only to the store.
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

// newNamespace is an Active namespace as kube-apiserver creates one.
func newNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
}

// DefaultResync is how often a namespace still being emptied is looked at
// again even if no deletion in it was seen.
const DefaultResync = 5 * time.Second

// Controller empties terminating namespaces. Create it with New, start it
// with Run.
type Controller struct {
	store  *db.Store
	resync time.Duration
}

// New returns a namespace controller; resync 0 means DefaultResync.
func New(store *db.Store, resync time.Duration) *Controller {
	if resync <= 0 {
		resync = DefaultResync
	}
	return &Controller{store: store, resync: resync}
}

// Run watches namespaces, and the deletions of what they hold, until ctx
// ends (nil) or the store closes.
func (c *Controller) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dirty := make(chan string, 64)
	errs := make(chan error, 4)
	follow := func(r db.Resource, onList func([]db.Object), onEvent func(db.Event)) {
		w, err := c.store.ListWatch(ctx, r, onList)
		if err == nil {
			err = c.store.Consume(ctx, r, w, onList, onEvent)
		}
		if err != nil && ctx.Err() == nil {
			errs <- fmt.Errorf("following %s: %w", r.Name, err)
			cancel()
		}
	}
	mark := func(ns string) {
		select {
		case dirty <- ns:
		case <-ctx.Done():
		}
	}
	terminating := func(objs []db.Object) {
		for _, obj := range objs {
			if obj.GetDeletionTimestamp() != nil {
				mark(obj.GetName())
			}
		}
	}
	go follow(db.Namespaces, terminating, func(ev db.Event) {
		if ev.Type != watch.Deleted {
			terminating([]db.Object{ev.Object})
		}
	})
	for _, r := range []db.Resource{db.CronJobs, db.Jobs, db.Pods, db.Services} {
		go follow(r, func([]db.Object) {}, func(ev db.Event) {
			if ev.Type == watch.Deleted {
				mark(ev.Object.GetNamespace())
			}
		})
	}
	return c.loop(ctx, dirty, errs)
}

// loop empties the namespaces marked dirty, and looks again at those not
// yet empty every resync.
func (c *Controller) loop(ctx context.Context, dirty <-chan string, errs <-chan error) error {
	pending := map[string]bool{}
	tick := time.NewTicker(c.resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			select {
			case err := <-errs:
				return err
			default:
				return nil
			}
		case ns := <-dirty:
			if !pending[ns] && !c.isTerminating(ns) {
				continue
			}
			pending[ns] = !c.finalize(ns)
		case <-tick.C:
			for ns := range pending {
				pending[ns] = !c.finalize(ns)
			}
		}
		for ns, p := range pending {
			if !p {
				delete(pending, ns)
			}
		}
	}
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

// deleteContent deletes the CronJobs, Jobs, Pods, Events, Services, Endpoints and
// EndpointSlices of ns, as the namespace controller's deletecollection
// calls do: Pods gracefully (their containers are stopped first), the rest
// at once. It returns how many objects remain.
func deleteContent(tx *db.Tx, ns string) (int, error) {
	left := 0
	for _, r := range []db.Resource{db.CronJobs, db.Jobs, db.Pods, db.Events, db.Services, db.Endpoints, db.EndpointSlices} {
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
