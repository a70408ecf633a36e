package serviceaccount

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/skiff-sh/skiff/db"
)

// StoreGetter is the Getter of the objects in a store, as committed; a
// missing object is kube's NotFound Status error.
type StoreGetter struct{ Store *db.Store }

var _ Getter = StoreGetter{}

// ServiceAccount reads namespace/name.
func (g StoreGetter) ServiceAccount(namespace, name string) (*corev1.ServiceAccount, error) {
	return find[*corev1.ServiceAccount](g.Store, db.ServiceAccounts, namespace, name)
}

// Pod reads namespace/name.
func (g StoreGetter) Pod(namespace, name string) (*corev1.Pod, error) {
	return find[*corev1.Pod](g.Store, db.Pods, namespace, name)
}

// Secret reads namespace/name.
func (g StoreGetter) Secret(namespace, name string) (*corev1.Secret, error) {
	return find[*corev1.Secret](g.Store, db.Secrets, namespace, name)
}

// Node reads the node name.
func (g StoreGetter) Node(name string) (*corev1.Node, error) {
	return find[*corev1.Node](g.Store, db.Nodes, "", name)
}

func find[T db.Object](store *db.Store, r db.Resource, namespace, name string) (T, error) {
	var obj T
	found := false
	err := store.Read(func(tx *db.Tx) error {
		got, err := tx.Get(r, namespace, name)
		if err != nil {
			return err
		}
		obj, found = got.(T)
		return nil
	})
	if errors.Is(err, db.ErrNotFound) || (err == nil && !found) {
		// NOTE: the group resource as kube-apiserver names it in the error.
		err = apierrors.NewNotFound(corev1.Resource(r.Name), name)
	}
	return obj, err
}
