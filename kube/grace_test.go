package kube

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestDeletionGrace(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	pod := func(node string, phase corev1.PodPhase, grace *int64) *corev1.Pod {
		return &corev1.Pod{
			Spec:   corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: grace},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	tests := map[string]struct {
		obj       runtime.Object
		requested *int64
		want      int64
	}{
		"running, default":           {pod("n", corev1.PodRunning, nil), nil, 30},
		"running, pod's own":         {pod("n", corev1.PodRunning, i64(5)), nil, 5},
		"running, requested wins":    {pod("n", corev1.PodRunning, i64(5)), i64(2), 2},
		"requested zero":             {pod("n", corev1.PodRunning, i64(5)), i64(0), 0},
		"negative request means one": {pod("n", corev1.PodRunning, nil), i64(-3), 1},
		"never scheduled":            {pod("", corev1.PodPending, i64(5)), i64(9), 0},
		"succeeded":                  {pod("n", corev1.PodSucceeded, i64(5)), nil, 0},
		"failed":                     {pod("n", corev1.PodFailed, i64(5)), nil, 0},
		"not a pod":                  {&batchv1.Job{}, i64(9), 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := DeletionGrace(tc.obj, tc.requested); got != tc.want {
				t.Errorf("DeletionGrace = %d, want %d", got, tc.want)
			}
		})
	}
}
