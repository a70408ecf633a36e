//go:build integration

package daemon_test

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// TestGatedFieldsDropped: a container-level restartPolicy on a regular
// container (the ContainerRestartRules gate, Alpha and off in v1.34) is
// dropped by a running skiffd as kube-apiserver drops it — accepted, not
// stored, not acted on — on a bare pod and in a Job's template, while a
// sidecar's restartPolicy Always stays.
func TestGatedFieldsDropped(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	always := ptr(corev1.ContainerRestartPolicyAlways)
	spec := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		InitContainers: []corev1.Container{{Name: "sidecar", Image: "busybox:1.35", RestartPolicy: always,
			Command: []string{"sleep", "3600"}}},
		// Were its restartPolicy acted on, the container would be restarted
		// and the pod would never fail.
		Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35", RestartPolicy: always,
			Command: []string{"sh", "-c", "exit 3"}}},
	}
	checkDropped := func(what string, got corev1.PodSpec) {
		t.Helper()
		if got.Containers[0].RestartPolicy != nil {
			t.Errorf("%s: the container's restartPolicy %q was stored", what, *got.Containers[0].RestartPolicy)
		}
		if p := got.InitContainers[0].RestartPolicy; p == nil || *p != corev1.ContainerRestartPolicyAlways {
			t.Errorf("%s: the sidecar's restartPolicy is %v, want Always", what, p)
		}
	}

	pod, err := s.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Spec: *spec.DeepCopy()}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDropped("pod create", pod.Spec)
	pod = waitPod(t, s.client, "gated", 2*time.Minute, "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	for _, st := range pod.Status.ContainerStatuses {
		if st.Name == "c" && st.RestartCount != 0 {
			t.Errorf("container c restarted %d times", st.RestartCount)
		}
	}

	job, err := s.client.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "gated"},
		Spec:       batchv1.JobSpec{BackoffLimit: ptr(int32(0)), Template: corev1.PodTemplateSpec{Spec: *spec.DeepCopy()}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDropped("job create", job.Spec.Template.Spec)
	// The Job controller writes the Job too: update the latest one.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest, err := s.client.BatchV1().Jobs("default").Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			return err
		}
		latest.Spec.Template.Spec.Containers[0].RestartPolicy = always
		job, err = s.client.BatchV1().Jobs("default").Update(ctx, latest, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	checkDropped("job update", job.Spec.Template.Spec)
}
