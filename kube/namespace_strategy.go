package kube

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImmortalNamespaces may not be deleted (kube-apiserver's
// NamespaceLifecycle admission).
var ImmortalNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic}

// PrepareNamespaceForCreate is kube's namespace strategy on create: phase
// Active, the "kubernetes" finalizer, and the immutable
// kubernetes.io/metadata.name label.
func PrepareNamespaceForCreate(ns *corev1.Namespace) {
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
	setNamespaceNameLabel(ns)
}

// PrepareNamespaceForUpdate keeps the status and spec.finalizers (which
// only the finalize subresource changes) on an update of a namespace.
func PrepareNamespaceForUpdate(ns, old *corev1.Namespace) {
	ns.Status = old.Status
	ns.Spec.Finalizers = old.Spec.Finalizers
	setNamespaceNameLabel(ns)
}

// PrepareNamespaceForStatusUpdate keeps the spec on an update of a
// namespace's status.
func PrepareNamespaceForStatusUpdate(ns, old *corev1.Namespace) {
	ns.Spec = old.Spec
	setNamespaceNameLabel(ns)
}

func setNamespaceNameLabel(ns *corev1.Namespace) {
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}
