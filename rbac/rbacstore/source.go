// Package rbacstore reads RBAC's roles and bindings from the store, inside
// one transaction: the rbac.Source of the API's escalation checks (which
// must see the transaction they write in) and of the RBAC cache until it
// has listed.
package rbacstore

import (
	"errors"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/rbac"
)

// TxSource is rbac.Source over one store transaction.
type TxSource struct{ Tx *db.Tx }

var _ rbac.Source = TxSource{}

// ClusterRoleBindings returns every ClusterRoleBinding.
func (s TxSource) ClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error) {
	return list[*rbacv1.ClusterRoleBinding](s.Tx, db.ClusterRoleBindings, "")
}

// RoleBindings returns the RoleBindings of namespace.
func (s TxSource) RoleBindings(namespace string) ([]*rbacv1.RoleBinding, error) {
	return list[*rbacv1.RoleBinding](s.Tx, db.RoleBindings, namespace)
}

// ClusterRole returns a ClusterRole, or kube's NotFound error.
func (s TxSource) ClusterRole(name string) (*rbacv1.ClusterRole, error) {
	return get[*rbacv1.ClusterRole](s.Tx, db.ClusterRoles, "", name, "clusterrole")
}

// Role returns a Role, or kube's NotFound error.
func (s TxSource) Role(namespace, name string) (*rbacv1.Role, error) {
	return get[*rbacv1.Role](s.Tx, db.Roles, namespace, name, "role")
}

func list[T db.Object](tx *db.Tx, r db.Resource, namespace string) ([]T, error) {
	objs, err := tx.List(r, namespace, nil)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(objs))
	for i, o := range objs {
		out[i] = o.(T)
	}
	return out, nil
}

// get reads one object; a missing one is kube's NotFound of kind, as
// RBAC's reasons name it ("clusterrole.rbac.authorization.k8s.io "x" not
// found").
func get[T db.Object](tx *db.Tx, r db.Resource, namespace, name, kind string) (T, error) {
	var zero T
	obj, err := tx.Get(r, namespace, name)
	if errors.Is(err, db.ErrNotFound) {
		return zero, NotFound(kind, name)
	}
	if err != nil {
		return zero, err
	}
	return obj.(T), nil
}

// NotFound is kube's error for a role RBAC could not find.
func NotFound(kind, name string) error {
	return apierrors.NewNotFound(rbacv1.Resource(kind), name)
}
