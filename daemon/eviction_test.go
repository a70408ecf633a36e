//go:build integration

package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An evicted Job pod carries DisruptionTarget, so a podFailurePolicy Ignore
// rule on it keeps the failure from counting: with backoffLimit 0 the Job
// still completes, through a replacement pod.
func TestEvictionIgnoredByPodFailurePolicy(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	hostDir := t.TempDir()
	// Every pod waits for the go file; the first is evicted before it exists.
	job := shJob("evicted", "until [ -e /shared/go ]; do sleep 0.1; done", 1, 1, 0, corev1.RestartPolicyNever)
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:          batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
	}}}
	spec := &job.Spec.Template.Spec
	spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	job, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	var first corev1.Pod
	waitFor(t, time.Minute, "the first pod running", func() (bool, error) {
		pods := jobPods(t, s.client, job)
		if len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning {
			first = pods[0]
			return true, nil
		}
		return false, nil
	})
	err = s.client.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: first.Name, Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(1))},
	})
	if err != nil {
		t.Fatalf("evicting %s: %v", first.Name, err)
	}
	// The job-tracking finalizer holds the pod until the Job counted it.
	evicted, err := s.client.CoreV1().Pods("default").Get(ctx, first.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting the evicted pod: %v", err)
	}
	if evicted.DeletionTimestamp == nil {
		t.Errorf("evicted pod has no deletionTimestamp")
	}
	want := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}
	ignoreTimes := cmpopts.IgnoreFields(corev1.PodCondition{}, "LastTransitionTime", "LastProbeTime", "ObservedGeneration")
	if diff := cmp.Diff(want, podCondition(evicted, corev1.DisruptionTarget), ignoreTimes); diff != "" {
		t.Errorf("DisruptionTarget (-want +got):\n%s", diff)
	}

	waitFor(t, time.Minute, "a replacement pod", func() (bool, error) {
		for _, p := range jobPods(t, s.client, job) {
			if p.UID != first.UID {
				return true, nil
			}
		}
		return false, nil
	})
	if err := os.WriteFile(filepath.Join(hostDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, s.client, "default", job.Name, batchv1.JobComplete, 2*time.Minute)
	if job.Status.Succeeded != 1 || job.Status.Failed != 0 || job.Status.Active != 0 {
		t.Errorf("succeeded=%d failed=%d active=%d, want 1/0/0", job.Status.Succeeded, job.Status.Failed, job.Status.Active)
	}
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed || c.Type == batchv1.JobFailureTarget {
			t.Errorf("condition %s/%s: %s", c.Type, c.Reason, c.Message)
		}
	}
}
