package kube

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKubeValue(t *testing.T) {
	tests := map[string]struct {
		in   any
		want string
	}{
		"scalars stay": {in: int32(3), want: `3`},
		"apimachinery types keep their JSON": {
			in: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}, want: `{"matchLabels":{"a":"b"}}`,
		},
		"nil pointer to an API struct": {in: (*batchv1.PodFailurePolicy)(nil), want: `null`},
		"API struct under Go field names": {
			in: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}},
			want: `{"Rules":[{"Action":"Ignore","OnExitCodes":null,"OnPodConditions":[{"Type":"DisruptionTarget","Status":"True"}]}]}`,
		},
		"embedded metadata is inlined": {
			in: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"disk": "ssd"}}},
			want: `{"labels":{"a":"b"},"Spec":{"Volumes":null,`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			data, err := json.Marshal(kubeValue(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			got := string(data)
			if len(got) > len(tc.want) && tc.want[len(tc.want)-1] == ',' {
				got = got[:len(tc.want)] // a prefix is enough for a whole pod spec
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
