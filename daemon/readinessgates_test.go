//go:build integration

package daemon_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestReadinessGates: a running pod with readiness gates is Ready only
// while every gate's condition, set by a client through pods/status, is
// True, and follows each change of them.
func TestReadinessGates(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client

	pod := shPod("gated", corev1.RestartPolicyNever, "sleep 3600")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/gate1"}, {ConditionType: "example.com/gate2"}}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := func(p *corev1.Pod) *corev1.PodCondition {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				return &p.Status.Conditions[i]
			}
		}
		return nil
	}
	waitPod(t, c, "gated", time.Minute, "running, not ready for its gates", func(p *corev1.Pod) bool {
		r := ready(p)
		return p.Status.Phase == corev1.PodRunning && r != nil && r.Status == corev1.ConditionFalse && r.Reason == "ReadinessGatesNotReady"
	})
	setGates := func(gate1, gate2 corev1.ConditionStatus) {
		t.Helper()
		patch := `{"status":{"conditions":[{"type":"example.com/gate1","status":"` + string(gate1) + `"},{"type":"example.com/gate2","status":"` + string(gate2) + `"}]}}`
		if _, err := c.CoreV1().Pods("default").Patch(ctx, "gated", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	setGates(corev1.ConditionTrue, corev1.ConditionFalse)
	waitPod(t, c, "gated", time.Minute, "naming the gate still false", func(p *corev1.Pod) bool {
		r := ready(p)
		return r != nil && r.Status == corev1.ConditionFalse && r.Message == `the status of pod readiness gate "example.com/gate2" is not "True", but False`
	})
	setGates(corev1.ConditionTrue, corev1.ConditionTrue)
	waitPod(t, c, "gated", time.Minute, "ready", func(p *corev1.Pod) bool {
		r := ready(p)
		return r != nil && r.Status == corev1.ConditionTrue
	})
	setGates(corev1.ConditionFalse, corev1.ConditionTrue)
	waitPod(t, c, "gated", time.Minute, "not ready again", func(p *corev1.Pod) bool {
		r := ready(p)
		return r != nil && r.Status == corev1.ConditionFalse
	})
}
