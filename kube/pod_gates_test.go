package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestDropGatedPodSpecFields(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	never := ptr.To(corev1.ContainerRestartPolicy("Never"))
	rules := []corev1.ContainerRestartRule{{Action: "Restart", ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: "In", Values: []int32{42}}}}
	gated := corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "sidecar", RestartPolicy: always, RestartPolicyRules: rules},
			{Name: "init", RestartPolicy: never},
		},
		Containers: []corev1.Container{{Name: "c", RestartPolicy: always, RestartPolicyRules: rules}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "e", RestartPolicy: always}}},
	}
	dropped := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: always}, {Name: "init"}},
		Containers:     []corev1.Container{{Name: "c"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "e"}}},
	}
	tests := map[string]struct {
		old  *corev1.PodSpec
		want corev1.PodSpec
	}{
		"create":                        {old: nil, want: dropped},
		"update of a spec without them": {old: &dropped, want: dropped},
		// A spec stored while the gate was on keeps them, as kube keeps a
		// field in use.
		"update of a spec using them": {old: &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", RestartPolicy: never}}}, want: gated},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := *gated.DeepCopy()
			dropGatedPodSpecFields(&spec, tc.old)
			if diff := cmp.Diff(tc.want, spec); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
