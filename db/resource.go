package db

import (
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is what the store keeps: any k8s API object with ObjectMeta.
type Object interface {
	metav1.Object
	runtime.Object
}

// Resource names a stored kind: its plural resource name (the bucket name),
// whether it is namespaced, and how to make an empty value to decode into.
type Resource struct {
	Name       string // "jobs", "pods"
	Namespaced bool
	New        func() Object
	// Finalizing, if set, reports that an object marked for deletion is
	// still held although its metadata.finalizers are empty: a Namespace
	// waits for its spec.finalizers (see Tx.Update's finalizer rule).
	Finalizing func(obj Object) bool
	// NoGeneration: kube's strategy for the kind keeps no
	// metadata.generation (ConfigMaps, Secrets), so Create leaves it unset.
	NoGeneration bool
}

// The resources skiff stores.
var (
	Jobs       = Resource{Name: "jobs", Namespaced: true, New: func() Object { return &batchv1.Job{} }}
	CronJobs   = Resource{Name: "cronjobs", Namespaced: true, New: func() Object { return &batchv1.CronJob{} }}
	Pods       = Resource{Name: "pods", Namespaced: true, New: func() Object { return &corev1.Pod{} }}
	Events     = Resource{Name: "events", Namespaced: true, New: func() Object { return &corev1.Event{} }}
	Namespaces = Resource{Name: "namespaces", New: func() Object { return &corev1.Namespace{} },
		Finalizing: func(obj Object) bool { return len(obj.(*corev1.Namespace).Spec.Finalizers) > 0 }}
	Nodes           = Resource{Name: "nodes", New: func() Object { return &corev1.Node{} }, NoGeneration: true}
	Services        = Resource{Name: "services", Namespaced: true, New: func() Object { return &corev1.Service{} }}
	Endpoints       = Resource{Name: "endpoints", Namespaced: true, New: func() Object { return &corev1.Endpoints{} }}
	EndpointSlices  = Resource{Name: "endpointslices", Namespaced: true, New: func() Object { return &discoveryv1.EndpointSlice{} }}
	ConfigMaps      = Resource{Name: "configmaps", Namespaced: true, New: func() Object { return &corev1.ConfigMap{} }, NoGeneration: true}
	Secrets         = Resource{Name: "secrets", Namespaced: true, New: func() Object { return &corev1.Secret{} }, NoGeneration: true}
	ServiceAccounts = Resource{Name: "serviceaccounts", Namespaced: true, New: func() Object { return &corev1.ServiceAccount{} },
		NoGeneration: true}
	PodTemplates = Resource{Name: "podtemplates", Namespaced: true, New: func() Object { return &corev1.PodTemplate{} }}
	Leases       = Resource{Name: "leases", Namespaced: true, New: func() Object { return &coordinationv1.Lease{} }, NoGeneration: true}
	// RuntimeClasses: kube's strategy keeps no generation.
	RuntimeClasses = Resource{Name: "runtimeclasses", New: func() Object { return &nodev1.RuntimeClass{} }, NoGeneration: true}

	// RBAC's kinds: kube's strategies keep no generation for them either.
	Roles               = Resource{Name: "roles", Namespaced: true, New: func() Object { return &rbacv1.Role{} }, NoGeneration: true}
	RoleBindings        = Resource{Name: "rolebindings", Namespaced: true, New: func() Object { return &rbacv1.RoleBinding{} }, NoGeneration: true}
	ClusterRoles        = Resource{Name: "clusterroles", New: func() Object { return &rbacv1.ClusterRole{} }, NoGeneration: true}
	ClusterRoleBindings = Resource{Name: "clusterrolebindings", New: func() Object { return &rbacv1.ClusterRoleBinding{} }, NoGeneration: true}
)
