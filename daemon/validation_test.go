//go:build integration

package daemon_test

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestValidationThroughSkiffd: the inputs issue 16 names (a Job status a
// client writes, hostPath and subPath climbing out with '..') are refused by
// a running skiffd with kube-apiserver's 422 and its messages, through
// client-go; nothing refused is stored.
func TestValidationThroughSkiffd(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()

	// A Job another controller manages: its status is the client's to write.
	jobs := s.client.BatchV1().Jobs("default")
	job, err := jobs.Create(ctx, &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "st"},
		Spec: batchv1.JobSpec{
			ManagedBy: ptr(otherManager),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35"}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job.Status.Succeeded = -5
	job.Status.CompletedIndexes = "zz"
	_, err = jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
	const wantStatus = `Job.batch "st" is invalid: [status.succeeded: Invalid value: -5: must be greater than or equal to 0, ` +
		`status.completedIndexes: Invalid value: "zz": error parsing completedIndexes: cannot convert string to integer for index: "zz", ` +
		`status.completedIndexes: Invalid value: "zz": cannot set non-empty completedIndexes when non-indexed completion mode, ` +
		`status.succeeded: Invalid value: -5: cannot decrease the succeeded counter]`
	if !apierrors.IsInvalid(err) || err.Error() != wantStatus {
		t.Errorf("status update with a negative counter: %v\nwant 422 %s", err, wantStatus)
	}
	if got, err := jobs.Get(ctx, "st", metav1.GetOptions{}); err != nil || got.Status.Succeeded != 0 || got.Status.CompletedIndexes != "" {
		t.Errorf("after the refused status update: %+v %v", got.Status, err)
	}

	// hostPath and subPath with '..', on a bare pod and in a Job's template.
	spec := corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Volumes: []corev1.Volume{
			{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "../../etc"}}},
			{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
		Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35",
			VolumeMounts: []corev1.VolumeMount{{Name: "e", MountPath: "/e", SubPath: "../../../../etc"}}}},
	}
	_, err = s.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "climb"}, Spec: spec}, metav1.CreateOptions{})
	const wantPod = `Pod "climb" is invalid: [spec.volumes[0].hostPath.path: Invalid value: "../../etc": must not contain '..', ` +
		`spec.containers[0].volumeMounts.subPath: Invalid value: "../../../../etc": must not contain '..']`
	if !apierrors.IsInvalid(err) || err.Error() != wantPod {
		t.Errorf("pod climbing out: %v\nwant 422 %s", err, wantPod)
	}
	_, err = jobs.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "climb"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}, metav1.CreateOptions{})
	const wantJob = `Job.batch "climb" is invalid: [spec.template.spec.volumes[0].hostPath.path: Invalid value: "../../etc": must not contain '..', ` +
		`spec.template.spec.containers[0].volumeMounts.subPath: Invalid value: "../../../../etc": must not contain '..']`
	if !apierrors.IsInvalid(err) || err.Error() != wantJob {
		t.Errorf("Job whose pods climb out: %v\nwant 422 %s", err, wantJob)
	}
	pods, err := s.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods stored after the refusals: %d %v", len(pods.Items), err)
	}
}
