package nodelifecycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHealthTaints(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	user := corev1.Taint{Key: "example.com/x", Effect: corev1.TaintEffectNoExecute}
	unreachable := []corev1.Taint{
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now},
	}
	tests := map[string]struct {
		taints []corev1.Taint
		ready  *corev1.NodeCondition
		want   []corev1.Taint
	}{
		"ready":        {taints: []corev1.Taint{user}, ready: &corev1.NodeCondition{Status: corev1.ConditionTrue}, want: []corev1.Taint{user}},
		"no condition": {taints: unreachable, want: []corev1.Taint{}},
		"unknown":      {taints: []corev1.Taint{user}, ready: &corev1.NodeCondition{Status: corev1.ConditionUnknown}, want: append([]corev1.Taint{user}, unreachable...)},
		"unknown already tainted": {
			taints: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &earlier}},
			ready:  &corev1.NodeCondition{Status: corev1.ConditionUnknown},
			want: []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &earlier},
				{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}},
		},
		"not ready replaces unreachable": {
			taints: unreachable,
			ready:  &corev1.NodeCondition{Status: corev1.ConditionFalse},
			want: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
				{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute, TimeAdded: &now}},
		},
		"ready again": {taints: append([]corev1.Taint{user}, unreachable...), ready: &corev1.NodeCondition{Status: corev1.ConditionTrue}, want: []corev1.Taint{user}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, healthTaints(tc.taints, tc.ready, now)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestMarkUnknown(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	created := metav1.NewTime(now.Add(-time.Minute))
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "E2E", LastHeartbeatTime: created, LastTransitionTime: created},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown, Reason: "Old", LastTransitionTime: created},
		}},
	}
	markUnknown(node, now)
	want := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.",
			LastHeartbeatTime: created, LastTransitionTime: now},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown, Reason: "Old", LastTransitionTime: created},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionUnknown, Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
			LastHeartbeatTime: created, LastTransitionTime: now},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionUnknown, Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
			LastHeartbeatTime: created, LastTransitionTime: now},
	}
	if diff := cmp.Diff(want, node.Status.Conditions); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}
