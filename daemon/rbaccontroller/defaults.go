package rbaccontroller

import (
	"errors"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/rbac"
)

// EnsureDefaults reconciles kube's default cluster roles and bindings in
// one transaction, as kube-apiserver does at every start: a missing one is
// created; one annotated rbac.authorization.kubernetes.io/autoupdate:
// "true" gets back the rules, aggregation selectors, subjects, labels and
// annotations it lost (what an administrator added stays); "false" is left
// alone. A binding whose roleRef was changed is recreated.
func EnsureDefaults(store *db.Store) error {
	return store.Write(func(tx *db.Tx) error {
		for _, want := range rbac.DefaultClusterRoles() {
			if err := ensureClusterRole(tx, &want); err != nil {
				return fmt.Errorf("reconciling clusterrole %s: %w", want.Name, err)
			}
		}
		for _, want := range rbac.DefaultClusterRoleBindings() {
			if err := ensureClusterRoleBinding(tx, &want); err != nil {
				return fmt.Errorf("reconciling clusterrolebinding %s: %w", want.Name, err)
			}
		}
		return nil
	})
}

func autoUpdate(annotations map[string]string) bool {
	return annotations[rbacv1.AutoUpdateAnnotationKey] != "false"
}

func ensureClusterRole(tx *db.Tx, want *rbacv1.ClusterRole) error {
	obj, err := tx.Get(db.ClusterRoles, "", want.Name)
	if errors.Is(err, db.ErrNotFound) {
		return tx.Create(db.ClusterRoles, want)
	}
	if err != nil {
		return err
	}
	have := obj.(*rbacv1.ClusterRole)
	if !autoUpdate(have.Annotations) {
		return nil
	}
	role := have.DeepCopy()
	role.Labels = mergeMaps(role.Labels, want.Labels)
	role.Annotations = mergeMaps(role.Annotations, want.Annotations)
	if want.AggregationRule != nil {
		// NOTE: an aggregated role's rules are the controller's to fill;
		// only its selectors are reconciled, as kube does.
		if role.AggregationRule == nil {
			role.AggregationRule = &rbacv1.AggregationRule{}
		}
		for _, sel := range want.AggregationRule.ClusterRoleSelectors {
			if !slices.ContainsFunc(role.AggregationRule.ClusterRoleSelectors, func(s metav1.LabelSelector) bool { return equality.Semantic.DeepEqual(s, sel) }) {
				role.AggregationRule.ClusterRoleSelectors = append(role.AggregationRule.ClusterRoleSelectors, sel)
			}
		}
	} else if covered, missing := validation.Covers(role.Rules, want.Rules); !covered {
		role.Rules = append(role.Rules, missing...)
	}
	if equality.Semantic.DeepEqual(role, have) {
		return nil
	}
	return tx.Update(db.ClusterRoles, role)
}

func ensureClusterRoleBinding(tx *db.Tx, want *rbacv1.ClusterRoleBinding) error {
	obj, err := tx.Get(db.ClusterRoleBindings, "", want.Name)
	if errors.Is(err, db.ErrNotFound) {
		return tx.Create(db.ClusterRoleBindings, want)
	}
	if err != nil {
		return err
	}
	have := obj.(*rbacv1.ClusterRoleBinding)
	if !autoUpdate(have.Annotations) {
		return nil
	}
	if have.RoleRef != want.RoleRef {
		if _, err := tx.Delete(db.ClusterRoleBindings, "", want.Name); err != nil {
			return err
		}
		return tx.Create(db.ClusterRoleBindings, want)
	}
	b := have.DeepCopy()
	b.Labels = mergeMaps(b.Labels, want.Labels)
	b.Annotations = mergeMaps(b.Annotations, want.Annotations)
	for _, s := range want.Subjects {
		if !slices.Contains(b.Subjects, s) {
			b.Subjects = append(b.Subjects, s)
		}
	}
	if equality.Semantic.DeepEqual(b, have) {
		return nil
	}
	return tx.Update(db.ClusterRoleBindings, b)
}

// mergeMaps is have with want's keys added (want's values win).
func mergeMaps(have, want map[string]string) map[string]string {
	if len(want) == 0 {
		return have
	}
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}
