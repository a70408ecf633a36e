package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestAdmitDefaultTolerationSeconds(t *testing.T) {
	seconds := func(s int64) *int64 { return &s }
	notReady := corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds(300)}
	unreachable := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds(300)}
	own := corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, TolerationSeconds: seconds(5)}
	tests := map[string]struct{ in, want []corev1.Toleration }{
		"none":            {want: []corev1.Toleration{notReady, unreachable}},
		"own unreachable": {in: []corev1.Toleration{own}, want: []corev1.Toleration{own, notReady}},
		"everything":      {in: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, want: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		"NoSchedule only": {in: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, want: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, notReady, unreachable}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tc.in}}
			admitDefaultTolerationSeconds(pod)
			if diff := cmp.Diff(tc.want, pod.Spec.Tolerations); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
