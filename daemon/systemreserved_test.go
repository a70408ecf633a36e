package daemon

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseSystemReserved(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    corev1.ResourceList
		wantErr bool
	}{
		"cpu and memory": {in: "cpu=500m,memory=1Gi", want: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
		"spaces, others": {in: " memory=100Mi , ephemeral-storage=1Gi", want: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("1Gi")}},
		"empty":          {in: "", want: corev1.ResourceList{}},
		"no value":       {in: "cpu", wantErr: true},
		"bad quantity":   {in: "cpu=lots", wantErr: true},
		"negative":       {in: "memory=-1Gi", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseSystemReserved(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
