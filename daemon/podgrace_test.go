//go:build integration

package daemon_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// TestNegativeGracePeriod: a pod created or updated with a negative
// terminationGracePeriodSeconds is stored with 1, as kube-apiserver's
// conversion of a Pod does, instead of being refused; a Job's template
// keeps its value.
func TestNegativeGracePeriod(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")

	pod := shPod("negative", corev1.RestartPolicyOnFailure, "sleep 3600")
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(-1))
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := created.Spec.TerminationGracePeriodSeconds; g == nil || *g != 1 {
		t.Errorf("created with terminationGracePeriodSeconds %v, want 1", g)
	}
	var updated *corev1.Pod
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := pods.Get(ctx, "negative", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.TerminationGracePeriodSeconds = ptr(int64(-1))
		updated, err = pods.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("updating to -1: %v", err)
	}
	if g := updated.Spec.TerminationGracePeriodSeconds; g == nil || *g != 1 {
		t.Errorf("updated to terminationGracePeriodSeconds %v, want 1", g)
	}

	job := shJob("negative", "true", 1, 1, 0, corev1.RestartPolicyNever)
	job.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(-1))
	stored, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := stored.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != -1 {
		t.Errorf("the Job's template has terminationGracePeriodSeconds %v, want -1 kept", g)
	}
}
