package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The verb sets of kube's default roles.
var (
	verbsWrite     = []string{"create", "update", "patch", "delete", "deletecollection"}
	verbsReadWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	verbsRead      = []string{"get", "list", "watch"}
)

// The labels and annotation kube puts on its default roles and bindings.
// AutoUpdateAnnotation "true" lets the API server put back what they lost
// at every start; "false" leaves them to the administrator.
const (
	bootstrapLabel     = "kubernetes.io/bootstrapping"
	bootstrapLabelVal  = "rbac-defaults"
	aggregateToAdmin   = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit    = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView    = "rbac.authorization.k8s.io/aggregate-to-view"
	groupAuthenticated = "system:authenticated"
	groupUnauthed      = "system:unauthenticated"
)

func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: paths}
}

func g(groups ...string) []string { return groups }

func v(verbs ...string) []string { return verbs }

// defaultMeta is the metadata of a default object: its name, kube's
// bootstrapping label, the autoupdate annotation and extra labels.
func defaultMeta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{bootstrapLabel: bootstrapLabelVal}
	for k, val := range labels {
		l[k] = val
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"}}
}

func aggregation(label string) *rbacv1.AggregationRule {
	return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}}
}

// DefaultClusterRoles are the cluster roles of kube's bootstrap policy
// that a single node serving users needs: cluster-admin, the discovery,
// basic-user and public-info-viewer roles every cluster binds, and the
// user-facing admin, edit and view roles with the aggregated roles that
// fill them.
func DefaultClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		{ObjectMeta: defaultMeta("cluster-admin", nil), Rules: []rbacv1.PolicyRule{
			rule(v("*"), g("*"), "*"),
			urls(v("*"), "*"),
		}},
		{ObjectMeta: defaultMeta("system:discovery", nil), Rules: []rbacv1.PolicyRule{
			urls(v("get"), "/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"),
		}},
		{ObjectMeta: defaultMeta("system:monitoring", nil), Rules: []rbacv1.PolicyRule{
			urls(v("get"), "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*"),
			rule(v("get"), g(""), "nodes/metrics"),
		}},
		{ObjectMeta: defaultMeta("system:basic-user", nil), Rules: []rbacv1.PolicyRule{
			rule(v("create"), g("authorization.k8s.io"), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			rule(v("create"), g("authentication.k8s.io"), "selfsubjectreviews"),
		}},
		{ObjectMeta: defaultMeta("system:public-info-viewer", nil), Rules: []rbacv1.PolicyRule{
			urls(v("get"), "/livez", "/readyz", "/healthz", "/version", "/version/"),
		}},
		{ObjectMeta: defaultMeta("admin", nil), AggregationRule: aggregation(aggregateToAdmin)},
		{ObjectMeta: defaultMeta("edit", map[string]string{aggregateToAdmin: "true"}), AggregationRule: aggregation(aggregateToEdit)},
		{ObjectMeta: defaultMeta("view", map[string]string{aggregateToEdit: "true"}), AggregationRule: aggregation(aggregateToView)},
		{ObjectMeta: defaultMeta("system:aggregate-to-admin", map[string]string{aggregateToAdmin: "true"}), Rules: []rbacv1.PolicyRule{
			rule(v("create"), g("authorization.k8s.io"), "localsubjectaccessreviews"),
			rule(verbsReadWrite, g("rbac.authorization.k8s.io"), "roles", "rolebindings"),
		}},
		{ObjectMeta: defaultMeta("system:aggregate-to-edit", map[string]string{aggregateToEdit: "true"}), Rules: editRules()},
		{ObjectMeta: defaultMeta("system:aggregate-to-view", map[string]string{aggregateToView: "true"}), Rules: viewRules()},
	}
}

// viewRules are kube's read-only rights on the non-escalating resources
// of a namespace.
func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(verbsRead, g(""), "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
		rule(verbsRead, g(""), "limitranges", "resourcequotas", "bindings", "events",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
		rule(verbsRead, g(""), "namespaces"),
		rule(verbsRead, g("discovery.k8s.io"), "endpointslices"),
		rule(verbsRead, g("apps"), "controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale"),
		rule(verbsRead, g("autoscaling"), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(verbsRead, g("batch"), "jobs", "cronjobs", "cronjobs/status", "jobs/status"),
		rule(verbsRead, g("extensions"), "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
			"networkpolicies"),
		rule(verbsRead, g("policy"), "poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(verbsRead, g("networking.k8s.io"), "networkpolicies", "ingresses", "ingresses/status"),
	}
}

// editRules are kube's rights to change the user-level objects of a
// namespace (not its quotas, limits or RBAC).
func editRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(verbsRead, g(""), "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
		rule(v("impersonate"), g(""), "serviceaccounts"),
		rule(verbsWrite, g(""), "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
		rule(v("create"), g(""), "pods/eviction"),
		rule(verbsWrite, g(""), "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events"),
		rule(v("create"), g(""), "serviceaccounts/token"),
		rule(verbsWrite, g("apps"), "statefulsets", "statefulsets/scale", "daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"),
		rule(verbsWrite, g("autoscaling"), "horizontalpodautoscalers"),
		rule(verbsWrite, g("batch"), "jobs", "cronjobs"),
		rule(verbsWrite, g("extensions"), "daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses",
			"replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
		rule(verbsWrite, g("policy"), "poddisruptionbudgets"),
		rule(verbsWrite, g("networking.k8s.io"), "networkpolicies", "ingresses"),
		rule(verbsReadWrite, g("coordination.k8s.io"), "leases"),
	}
}

// DefaultClusterRoleBindings are kube's bindings of the default roles.
func DefaultClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bind := func(role string, groups ...string) rbacv1.ClusterRoleBinding {
		b := rbacv1.ClusterRoleBinding{ObjectMeta: defaultMeta(role, nil),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
		for _, grp := range groups {
			b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: grp})
		}
		return b
	}
	return []rbacv1.ClusterRoleBinding{
		bind("cluster-admin", GroupMasters),
		bind("system:monitoring", "system:monitoring"),
		bind("system:discovery", groupAuthenticated),
		bind("system:basic-user", groupAuthenticated),
		bind("system:public-info-viewer", groupAuthenticated, groupUnauthed),
	}
}
