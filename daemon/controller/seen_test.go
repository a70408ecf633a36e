package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSeenMetaRoundTrips(t *testing.T) {
	tests := map[string]struct {
		labels map[string]string
		owners []metav1.OwnerReference
	}{
		"nothing":     {},
		"labels only": {labels: map[string]string{"job-name": "pi", "batch.kubernetes.io/job-name": "pi", "empty": ""}},
		"an owner with unset flags": {
			owners: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "pi", UID: "u1"}},
		},
		"owners with every flag, the last fields empty": {
			labels: map[string]string{"a": "b"},
			owners: []metav1.OwnerReference{
				{APIVersion: "batch/v1", Kind: "Job", Name: "pi", UID: "u1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false)},
				{APIVersion: "v1", Kind: "ConfigMap", Name: "c", UID: "u2", Controller: ptr.To(false)},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.labels, decodeLabels(encodeLabels(tc.labels))); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.owners, decodeOwners(encodeOwners(tc.owners))); diff != "" {
				t.Errorf("owners (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSeenIsShared: two followers remembering the same object state share
// one interned copy of its metadata, whatever its labels map's order.
func TestSeenIsShared(t *testing.T) {
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u",
		Labels: map[string]string{"x": "1", "y": "2", "z": "3"}}}
	b := a.DeepCopy()
	if seen(a, 5) != seen(b, 5) {
		t.Error("the same object state remembered twice is not one interned value")
	}
	b.Labels["y"] = "changed"
	if seen(a, 5).meta == seen(b, 5).meta {
		t.Error("different labels share one interned value")
	}
}
