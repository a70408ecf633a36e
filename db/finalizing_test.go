package db

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNamespaceWaitsForSpecFinalizers: a namespace marked for deletion stays
// while spec.finalizers is not empty, and goes when the last one is removed.
func TestNamespaceWaitsForSpecFinalizers(t *testing.T) {
	tests := map[string]struct {
		finalizers []corev1.FinalizerName
		wantGone   bool
	}{
		"spec finalizer holds it": {finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		"no spec finalizer":       {wantGone: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, _ := openStore(t)
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"},
				Spec: corev1.NamespaceSpec{Finalizers: tc.finalizers}}
			mustCreate(t, s, Namespaces, ns)
			_, deleted, err := s.DeleteGracefully(Namespaces, "", "team", 0)
			if err != nil {
				t.Fatalf("DeleteGracefully: %v", err)
			}
			if diff := cmp.Diff(tc.wantGone, deleted); diff != "" {
				t.Fatalf("deleted (-want,+got):\n%s", diff)
			}
			if deleted {
				return
			}
			_, err = s.Modify(Namespaces, "", "team", func(obj Object) error {
				obj.(*corev1.Namespace).Spec.Finalizers = nil
				return nil
			})
			if err != nil {
				t.Fatalf("Modify: %v", err)
			}
			if _, err := s.Get(Namespaces, "", "team"); !errors.Is(err, ErrNotFound) {
				t.Errorf("after the last spec finalizer: Get = %v, want ErrNotFound", err)
			}
		})
	}
}
