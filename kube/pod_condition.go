package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// SetPodCondition sets cond (its lastTransitionTime the time of the
// change) in status and reports whether anything changed, as kube's
// UpdatePodCondition: lastTransitionTime moves only when the condition's
// status changes, and a new condition goes last.
func SetPodCondition(status *corev1.PodStatus, cond corev1.PodCondition) bool {
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != cond.Type {
			continue
		}
		if old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
		if equality.Semantic.DeepEqual(*old, cond) {
			return false
		}
		*old = cond
		return true
	}
	status.Conditions = append(status.Conditions, cond)
	return true
}
