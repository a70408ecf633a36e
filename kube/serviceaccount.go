package kube

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// DefaultServiceAccountName is the ServiceAccount every namespace has and
// a pod without spec.serviceAccountName runs as.
const DefaultServiceAccountName = "default"

// enforceMountableSecretsAnnotation is the ServiceAccount annotation kube
// deprecated in 1.32 (kubernetes.io/enforce-mountable-secrets).
const enforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"

// PrepareServiceAccount is the ServiceAccount strategy's PrepareForCreate
// and PrepareForUpdate: a secret reference keeps only its name.
func PrepareServiceAccount(sa *corev1.ServiceAccount) {
	for i, ref := range sa.Secrets {
		sa.Secrets[i] = corev1.ObjectReference{Name: ref.Name}
	}
}

// ServiceAccountWarnings are kube's warnings on a created ServiceAccount:
// the deprecated enforce-mountable-secrets annotation.
//
// NOTE: kube also warns on an update that newly sets the annotation; the
// API's warning hook does not see the stored object, so updates go
// without it.
func ServiceAccountWarnings(sa *corev1.ServiceAccount) []string {
	if _, ok := sa.Annotations[enforceMountableSecretsAnnotation]; !ok {
		return nil
	}
	return []string{fmt.Sprintf("metadata.annotations[%s]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets",
		enforceMountableSecretsAnnotation)}
}
