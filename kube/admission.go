package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AdmitNamespace is kube-apiserver's NamespaceLifecycle admission of a new
// object (resource, name) in namespace: ns is that namespace as the
// writer's transaction reads it, nil when it does not exist. A missing
// namespace is 404 NotFound; a terminating one 403 Forbidden carrying the
// NamespaceTerminating cause, by which controllers tell that every further
// creation there will fail too.
func AdmitNamespace(ns *corev1.Namespace, namespace string, resource schema.GroupResource, name string) error {
	if ns == nil {
		return apierrors.NewNotFound(corev1.Resource("namespaces"), namespace)
	}
	if ns.DeletionTimestamp == nil {
		return nil
	}
	err := apierrors.NewForbidden(resource, name,
		fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    corev1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", namespace),
		Field:   "metadata.namespace",
	})
	return err
}
