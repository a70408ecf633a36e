//go:build integration

package daemon_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSubPathExprRetried: a container whose subPathExpr expands from a
// missing annotation waits in CreateContainerConfigError with the
// kubelet's message and event; each change of the pod's annotations is
// tried at once (the restart back-off here is ten minutes, so a retry
// on the timer would come too late), showing the new failure while the
// path climbs out of the volume, and the container starts, with the
// subPath inside the volume, once the annotation names a good one.
func TestSubPathExprRetried(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--restart-backoff-base", "10m", "--restart-backoff-max", "10m")
	s.start()
	ctx := context.Background()
	c := s.client

	pod := shPod("subpath", corev1.RestartPolicyNever, "echo written > /subpath_mount/file && cat /data/mypath/foo/file")
	pod.Annotations = map[string]string{"notmysubpath": "mypath"}
	ctr := &pod.Spec.Containers[0]
	ctr.Env = []corev1.EnvVar{
		{Name: "POD_NAME", Value: "foo"},
		{Name: "ANNOTATION", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['mysubpath']"}}},
	}
	ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/subpath_mount", SubPathExpr: "$(ANNOTATION)/$(POD_NAME)"})
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, "subpath", time.Minute, "in CreateContainerConfigError", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodPending && waitingAs(p, "CreateContainerConfigError", "missing value for ANNOTATION")
	})
	waitEvent(t, c, "subpath", corev1.EventTypeWarning, "Failed", "Error: missing value for ANNOTATION")

	annotate := func(value string) {
		t.Helper()
		patch := []byte(`{"metadata":{"annotations":{"mysubpath":"` + value + `"}}}`)
		if _, err := c.CoreV1().Pods("default").Patch(ctx, "subpath", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	annotate("..")
	waitPod(t, c, "subpath", time.Minute, "refusing the path out of the volume", func(p *corev1.Pod) bool {
		return waitingAs(p, "CreateContainerConfigError", "unable to provision SubPath `../foo`: must not contain '..'")
	})

	annotate("mypath")
	got := waitPod(t, c, "subpath", time.Minute, "ended", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if log := podLog(t, c, "subpath"); got.Status.Phase != corev1.PodSucceeded || log != "written\n" {
		t.Errorf("pod %s, log %q; want Succeeded having read its subPath's file through the whole volume", got.Status.Phase, log)
	}
}
