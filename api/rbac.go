package api

import (
	"reflect"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// rbacV1 is the rbac.authorization.k8s.io/v1 group version.
var rbacV1 = groupVersion{group: rbacv1.GroupName, version: "v1"}

// rbacResource is the part every RBAC kind shares: kube's RBAC strategies
// keep no generation and no status, names are path segments, and a write
// passes the escalation check (admitRBAC) with the writer's rights.
func rbacResource(kind, plural, singular string, store db.Resource, goType, listType reflect.Type) *resource {
	return &resource{
		gv: rbacV1, kind: kind, plural: plural, singular: singular, store: store,
		goType: goType, listType: listType,
		fields:             objectFields,
		prepareCreate:      func(*server, db.Object) {},
		prepareUpdate:      func(db.Object, db.Object, bool) {},
		spec:               func(db.Object) any { return nil },
		defaultPropagation: metav1.DeletePropagationBackground,
		deleteGrace:        func(db.Object, *int64) int64 { return 0 },
		noStatus:           true,
		validateName:       kube.ValidateRBACName,
		admitWrite:         admitRBAC,
	}
}

var roleResource = func() *resource {
	rs := rbacResource("Role", "roles", "role", db.Roles, reflect.TypeOf(rbacv1.Role{}), reflect.TypeOf(rbacv1.RoleList{}))
	rs.newList = func(items []db.Object, meta metav1.ListMeta) runtime.Object {
		return &rbacv1.RoleList{TypeMeta: listTypeMeta("RoleList"), ListMeta: meta, Items: listItems[rbacv1.Role](items)}
	}
	rs.columns, rs.cells = createdAtColumns, createdAtCells
	rs.validateCreate = validateAs(kube.ValidateRole)
	rs.validateUpdate = validateUpdateAs(kube.ValidateRoleUpdate)
	return rs
}()

var clusterRoleResource = func() *resource {
	rs := rbacResource("ClusterRole", "clusterroles", "clusterrole", db.ClusterRoles, reflect.TypeOf(rbacv1.ClusterRole{}), reflect.TypeOf(rbacv1.ClusterRoleList{}))
	rs.newList = func(items []db.Object, meta metav1.ListMeta) runtime.Object {
		return &rbacv1.ClusterRoleList{TypeMeta: listTypeMeta("ClusterRoleList"), ListMeta: meta, Items: listItems[rbacv1.ClusterRole](items)}
	}
	rs.columns, rs.cells = createdAtColumns, createdAtCells
	rs.validateCreate = validateAs(kube.ValidateClusterRole)
	rs.validateUpdate = validateUpdateAs(kube.ValidateClusterRoleUpdate)
	return rs
}()

var roleBindingResource = func() *resource {
	rs := rbacResource("RoleBinding", "rolebindings", "rolebinding", db.RoleBindings, reflect.TypeOf(rbacv1.RoleBinding{}), reflect.TypeOf(rbacv1.RoleBindingList{}))
	rs.newList = func(items []db.Object, meta metav1.ListMeta) runtime.Object {
		return &rbacv1.RoleBindingList{TypeMeta: listTypeMeta("RoleBindingList"), ListMeta: meta, Items: listItems[rbacv1.RoleBinding](items)}
	}
	rs.columns = bindingColumns("roleBinding")
	rs.cells = func(obj db.Object, now time.Time) []any {
		b := obj.(*rbacv1.RoleBinding)
		return bindingCells(b.Name, b.CreationTimestamp, b.RoleRef, b.Subjects, now)
	}
	rs.prepareCreate = func(_ *server, obj db.Object) { kube.DefaultRoleBinding(obj.(*rbacv1.RoleBinding)) }
	rs.prepareUpdate = func(n, _ db.Object, _ bool) { kube.DefaultRoleBinding(n.(*rbacv1.RoleBinding)) }
	rs.validateCreate = validateAs(kube.ValidateRoleBinding)
	rs.validateUpdate = validateUpdateAs(kube.ValidateRoleBindingUpdate)
	return rs
}()

var clusterRoleBindingResource = func() *resource {
	rs := rbacResource("ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding", db.ClusterRoleBindings,
		reflect.TypeOf(rbacv1.ClusterRoleBinding{}), reflect.TypeOf(rbacv1.ClusterRoleBindingList{}))
	rs.newList = func(items []db.Object, meta metav1.ListMeta) runtime.Object {
		return &rbacv1.ClusterRoleBindingList{TypeMeta: listTypeMeta("ClusterRoleBindingList"), ListMeta: meta,
			Items: listItems[rbacv1.ClusterRoleBinding](items)}
	}
	rs.columns = bindingColumns("clusterRoleBinding")
	rs.cells = func(obj db.Object, now time.Time) []any {
		b := obj.(*rbacv1.ClusterRoleBinding)
		return bindingCells(b.Name, b.CreationTimestamp, b.RoleRef, b.Subjects, now)
	}
	rs.prepareCreate = func(_ *server, obj db.Object) { kube.DefaultClusterRoleBinding(obj.(*rbacv1.ClusterRoleBinding)) }
	rs.prepareUpdate = func(n, _ db.Object, _ bool) { kube.DefaultClusterRoleBinding(n.(*rbacv1.ClusterRoleBinding)) }
	rs.validateCreate = validateAs(kube.ValidateClusterRoleBinding)
	rs.validateUpdate = validateUpdateAs(kube.ValidateClusterRoleBindingUpdate)
	return rs
}()

func listTypeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacV1.String(), Kind: kind}
}

// createdAtColumns are kube's default table, which roles are printed with
// (they have no printer of their own).
var createdAtColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

func createdAtCells(obj db.Object, _ time.Time) []any {
	return []any{obj.GetName(), obj.GetCreationTimestamp().UTC().Format(time.RFC3339)}
}

// bindingColumns are kube's binding printer's; what names the kind in the
// subject columns' descriptions.
func bindingColumns(what string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Role", Type: "string", Description: rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]},
		ageColumn,
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + what},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + what},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + what},
	}
}

// bindingCells: "ClusterRole/view", then the users, groups and
// "namespace/name" ServiceAccounts the binding names.
func bindingCells(name string, created metav1.Time, ref rbacv1.RoleRef, subjects []rbacv1.Subject, now time.Time) []any {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return []any{name, ref.Kind + "/" + ref.Name, age(created, now),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}
