package endpointscontroller

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/skiff-sh/skiff/db"
)

// errNothing rolls back a sync that found nothing to change, so that a
// check costs no commit.
var errNothing = errors.New("nothing to do")

// sync brings the Service's Endpoints and EndpointSlices up to date with
// its pods, in one transaction.
func (c *Controller) sync(k serviceKey) error {
	err := c.store.Reconcile(func(tx *db.Tx) error {
		changed, err := syncService(tx, k)
		if err == nil && !changed {
			return errNothing
		}
		return err
	})
	if errors.Is(err, errNothing) {
		return nil
	}
	return err
}

// syncService writes, in tx, what the Service's endpoints must be, and
// reports whether it changed anything.
//
// NOTE: as kube's controllers do: a Service without selector (or of type
// ExternalName) gets nothing written, its endpoints are its clients';
// a deleted Service's Endpoints and slices go. A Service deleted with
// foreground propagation has its slices (its dependents) removed, then
// its foregroundDeletion finalizer: skiff's garbage collector only knows
// Jobs.
func syncService(tx *db.Tx, k serviceKey) (bool, error) {
	svc, err := db.Find[*corev1.Service](tx, db.Services, k.namespace, k.name)
	if err != nil {
		return false, err
	}
	if svc == nil {
		return removeOutputs(tx, k)
	}
	if svc.DeletionTimestamp != nil {
		return finishForeground(tx, svc)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return false, nil
	}
	ns, err := db.Find[*corev1.Namespace](tx, db.Namespaces, "", k.namespace)
	if err != nil {
		return false, err
	}
	if ns != nil && ns.DeletionTimestamp != nil {
		// NOTE: nothing new in a namespace being emptied (kube-apiserver
		// refuses the controllers' creates there).
		return removeOutputs(tx, k)
	}
	objs, err := tx.List(db.Pods, k.namespace, labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return false, err
	}
	pods := make([]*corev1.Pod, len(objs))
	for i, o := range objs {
		pods[i] = o.(*corev1.Pod)
	}
	changedEP, err := writeEndpoints(tx, svc, pods)
	if err != nil {
		return false, err
	}
	existing, err := managedSlices(tx, k)
	if err != nil {
		return false, err
	}
	plan := planSlices(svc, pods, existing)
	if err := applySlices(tx, plan); err != nil {
		return false, err
	}
	return changedEP || !plan.empty(), nil
}

// writeEndpoints creates or updates the Service's Endpoints object.
func writeEndpoints(tx *db.Tx, svc *corev1.Service, pods []*corev1.Pod) (bool, error) {
	current, err := db.Find[*corev1.Endpoints](tx, db.Endpoints, svc.Namespace, svc.Name)
	if err != nil {
		return false, err
	}
	want := desiredEndpoints(svc, pods, current)
	if !endpointsChanged(want, current) {
		return false, nil
	}
	if current == nil {
		err = tx.Create(db.Endpoints, want)
	} else {
		err = tx.Update(db.Endpoints, want)
	}
	if err != nil {
		return false, fmt.Errorf("writing endpoints %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return true, nil
}

// managedSlices are the EndpointSlices this controller keeps for the Service.
func managedSlices(tx *db.Tx, k serviceKey) ([]*discoveryv1.EndpointSlice, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: k.name, discoveryv1.LabelManagedBy: SliceController})
	objs, err := tx.List(db.EndpointSlices, k.namespace, sel)
	if err != nil {
		return nil, err
	}
	out := make([]*discoveryv1.EndpointSlice, len(objs))
	for i, o := range objs {
		out[i] = o.(*discoveryv1.EndpointSlice)
	}
	return out, nil
}

func applySlices(tx *db.Tx, plan slicePlan) error {
	for _, s := range plan.delete {
		if _, err := tx.Delete(db.EndpointSlices, s.Namespace, s.Name); err != nil && !errors.Is(err, db.ErrNotFound) {
			return fmt.Errorf("deleting endpoint slice %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	for _, s := range plan.update {
		if err := tx.Update(db.EndpointSlices, s); err != nil {
			return fmt.Errorf("updating endpoint slice %s/%s: %w", s.Namespace, s.Name, err)
		}
	}
	for _, s := range plan.create {
		if err := tx.Create(db.EndpointSlices, s); err != nil {
			return fmt.Errorf("creating endpoint slice for %s: %w", s.Labels[discoveryv1.LabelServiceName], err)
		}
	}
	return nil
}

// removeOutputs deletes a gone Service's Endpoints and the slices this
// controller made for it.
func removeOutputs(tx *db.Tx, k serviceKey) (bool, error) {
	changed := false
	if _, err := tx.Delete(db.Endpoints, k.namespace, k.name); err == nil {
		changed = true
	} else if !errors.Is(err, db.ErrNotFound) {
		return false, err
	}
	existing, err := managedSlices(tx, k)
	if err != nil {
		return false, err
	}
	if err := applySlices(tx, slicePlan{delete: existing}); err != nil {
		return false, err
	}
	return changed || len(existing) > 0, nil
}

// finishForeground completes the foreground deletion of a Service: its
// slices and Endpoints go, then the foregroundDeletion finalizer (and with
// it the Service, if no other finalizer holds it).
func finishForeground(tx *db.Tx, svc *corev1.Service) (bool, error) {
	if !slices.Contains(svc.Finalizers, metav1.FinalizerDeleteDependents) {
		return false, nil
	}
	if _, err := removeOutputs(tx, serviceKey{svc.Namespace, svc.Name}); err != nil {
		return false, err
	}
	svc.Finalizers = slices.DeleteFunc(svc.Finalizers, func(f string) bool { return f == metav1.FinalizerDeleteDependents })
	if err := tx.Update(db.Services, svc); err != nil {
		return false, fmt.Errorf("finishing the deletion of service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return true, nil
}
