package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestAllocatable(t *testing.T) {
	capacity := rl("cpu", "2", "memory", "4Gi", "ephemeral-storage", "100Gi", "pods", "110")
	tests := map[string]struct {
		reserved corev1.ResourceList
		want     corev1.ResourceList
	}{
		"nothing reserved": {nil, capacity},
		"cpu and memory": {rl("cpu", "500m", "memory", "1Gi"),
			rl("cpu", "1500m", "memory", "3Gi", "ephemeral-storage", "100Gi", "pods", "110")},
		"more than there is": {rl("memory", "8Gi"),
			rl("cpu", "2", "memory", "0", "ephemeral-storage", "100Gi", "pods", "110")},
		"a resource the node lacks": {rl("nvidia.com/gpu", "1"), capacity},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Allocatable(capacity, tc.reserved)
			if len(got) != len(tc.want) {
				t.Fatalf("Allocatable = %v, want %v", got, tc.want)
			}
			for res, q := range tc.want {
				if g := got[res]; g.Cmp(q) != 0 {
					t.Errorf("%s: %s, want %s", res, g.String(), q.String())
				}
			}
			if diff := cmp.Diff(rl("cpu", "2", "memory", "4Gi", "ephemeral-storage", "100Gi", "pods", "110"), capacity); diff != "" {
				t.Errorf("capacity changed (-want,+got):\n%s", diff)
			}
		})
	}
}
