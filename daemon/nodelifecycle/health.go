package nodelifecycle

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// monitoredConditions are the conditions the node lifecycle controller
// turns Unknown (NetworkUnavailable belongs to the network's provider).
var monitoredConditions = []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure}

// markUnknown turns the node's monitored conditions Unknown, as kube's
// tryUpdateNodeHealth does once the grace period has passed: a condition
// the node never had is added (its heartbeat the node's creation); one not
// Unknown yet changes, with now as its transition.
func markUnknown(node *corev1.Node, now metav1.Time) {
	for _, t := range monitoredConditions {
		i := slices.IndexFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == t })
		if i < 0 {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
				Type: t, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: now,
			})
			continue
		}
		c := &node.Status.Conditions[i]
		if c.Status != corev1.ConditionUnknown {
			c.Status, c.Reason, c.Message = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
			c.LastTransitionTime = now
		}
	}
}

// healthTaints are the node's taints with the node lifecycle controller's
// in line with its Ready condition (doNoScheduleTaintingPass and
// doNoExecuteTaintingPass): not-ready for False, unreachable for Unknown,
// neither for True or no condition, each with NoSchedule and NoExecute;
// a taint already there keeps its timeAdded, the other taints stay.
func healthTaints(taints []corev1.Taint, ready *corev1.NodeCondition, now metav1.Time) []corev1.Taint {
	want := ""
	if ready != nil {
		switch ready.Status {
		case corev1.ConditionFalse:
			want = corev1.TaintNodeNotReady
		case corev1.ConditionUnknown:
			want = corev1.TaintNodeUnreachable
		}
	}
	out := slices.DeleteFunc(slices.Clone(taints), func(t corev1.Taint) bool {
		return isHealthTaint(t) && t.Key != want
	})
	if want == "" {
		return out
	}
	for _, effect := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
		if !slices.ContainsFunc(out, func(t corev1.Taint) bool { return t.Key == want && t.Effect == effect }) {
			taint := corev1.Taint{Key: want, Effect: effect}
			if effect == corev1.TaintEffectNoExecute {
				// NOTE: kube stamps timeAdded on its NoExecute taints only.
				taint.TimeAdded = &now
			}
			out = append(out, taint)
		}
	}
	return out
}

// isHealthTaint: the taint is one the node lifecycle controller owns.
func isHealthTaint(t corev1.Taint) bool {
	return (t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable) &&
		(t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute)
}
