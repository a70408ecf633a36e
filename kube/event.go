package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateEvent checks what kube-apiserver checks of a core/v1 Event's
// place: the event lives in its object's namespace ("default" or none for
// a cluster-scoped object).
func ValidateEvent(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("involvedObject", "namespace")
	switch obj := ev.InvolvedObject.Namespace; {
	case obj == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != "":
		errs = append(errs, field.Invalid(p, obj, "does not match event.namespace"))
	case obj != "" && obj != ev.Namespace:
		errs = append(errs, field.Invalid(p, obj, "does not match event.namespace"))
	}
	return errs
}
