package db

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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
}

// The resources skiff stores. Later issues add more (events, namespaces).
var (
	Jobs = Resource{Name: "jobs", Namespaced: true, New: func() Object { return &batchv1.Job{} }}
	Pods = Resource{Name: "pods", Namespaced: true, New: func() Object { return &corev1.Pod{} }}
)
