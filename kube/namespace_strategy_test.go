package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespaceStrategy(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{corev1.LabelMetadataName: "other"}},
		Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}}}
	PrepareNamespaceForCreate(ns)
	want := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{corev1.LabelMetadataName: "team"}},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
	if diff := cmp.Diff(want, ns); diff != "" {
		t.Errorf("create (-want,+got):\n%s", diff)
	}
	update := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	PrepareNamespaceForUpdate(update, ns)
	if diff := cmp.Diff(want, update); diff != "" {
		t.Errorf("update keeps status, finalizers and the name label (-want,+got):\n%s", diff)
	}
	status := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}}
	PrepareNamespaceForStatusUpdate(status, ns)
	if status.Status.Phase != corev1.NamespaceTerminating || len(status.Spec.Finalizers) != 1 || status.Labels[corev1.LabelMetadataName] != "team" {
		t.Errorf("status update: %+v", status)
	}
}

func TestValidateEvent(t *testing.T) {
	tests := map[string]struct {
		eventNS, objectNS string
		wantErr           bool
	}{
		"same namespace":                   {"ns", "ns", false},
		"cluster-scoped object, default":   {"default", "", false},
		"cluster-scoped object, no ns":     {"", "", false},
		"cluster-scoped object, elsewhere": {"ns", "", true},
		"another namespace":                {"ns", "other", true},
	}
	for name, tc := range tests {
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: tc.eventNS},
			InvolvedObject: corev1.ObjectReference{Namespace: tc.objectNS}}
		if errs := ValidateEvent(ev); (len(errs) > 0) != tc.wantErr {
			t.Errorf("%s: ValidateEvent = %v", name, errs)
		}
	}
}
