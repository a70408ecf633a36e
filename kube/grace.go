package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DeletionGrace is the grace period kube-apiserver gives a deletion of obj
// (the pod strategy's CheckGracefulDelete): for a Pod the requested period,
// else its terminationGracePeriodSeconds, else 30 — a negative request
// meaning 1 — and 0 for a pod that never reached a node or has finished;
// 0 for every other kind, which has no graceful deletion. The API server,
// the controllers and the garbage collector all delete through it.
func DeletionGrace(obj runtime.Object, requested *int64) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" || IsPodTerminal(pod) {
		return 0
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	switch {
	case requested != nil:
		grace = *requested
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if grace < 0 {
		grace = 1
	}
	return grace
}
