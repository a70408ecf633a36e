package kube

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateObjectMeta validates the metadata of a new or updated object of
// any kind: validateName checks its name (or generateName prefix), and
// namespaced says whether it must have a namespace or must not.
func ValidateObjectMeta(obj metav1.Object, namespaced bool, validateName apivalidation.ValidateNameFunc) field.ErrorList {
	return apivalidation.ValidateObjectMetaAccessor(obj, namespaced, validateName, field.NewPath("metadata"))
}
