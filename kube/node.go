package kube

import corev1 "k8s.io/api/core/v1"

// DefaultMaxPods is the pods a node takes by default (the kubelet's
// --max-pods): its pods capacity.
const DefaultMaxPods = 110

// Allocatable is what a node offers to pods: its capacity less what is
// reserved for the system, resource by resource, never below zero (the
// kubelet's node status setter). A reservation of a resource the capacity
// does not list is ignored.
func Allocatable(capacity, reserved corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range capacity {
		left := q.DeepCopy()
		if r, ok := reserved[name]; ok {
			left.Sub(r)
		}
		if left.Sign() < 0 {
			left.Set(0)
		}
		out[name] = left
	}
	return out
}

// PrepareNodeForUpdate keeps the status on an update of a Node.
func PrepareNodeForUpdate(node, old *corev1.Node) { node.Status = old.Status }

// PrepareNodeForStatusUpdate keeps the spec on an update of a Node's
// status.
func PrepareNodeForStatusUpdate(node, old *corev1.Node) { node.Spec = old.Spec }
