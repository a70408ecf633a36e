//go:build integration

package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLogWaitingToStart: /log of a container that has not started is a
// 400 BadRequest saying why it waits, as kube-apiserver relays the
// kubelet's answer (an image that cannot be pulled and its back-off in
// the kubelet's words, other reasons as the status shows them), and
// previous=true of a container that never restarted is a 400 too.
func TestLogWaitingToStart(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")

	neverPull := shPod("never-pull", corev1.RestartPolicyNever, "true")
	neverPull.Spec.Containers[0].Image, neverPull.Spec.Containers[0].ImagePullPolicy = "docker.io/library/no-such-image:0", corev1.PullNever
	pullFails := shPod("pull-fails", corev1.RestartPolicyNever, "true")
	// A registry that wants credentials this pod does not have.
	pullFails.Spec.Containers[0].Image, pullFails.Spec.Containers[0].ImagePullPolicy = newAuthRegistry(t)+"/private/busybox:1.35", corev1.PullAlways
	initFirst := shPod("init-first", corev1.RestartPolicyNever, "true")
	initFirst.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.35", Command: []string{"sleep", "3600"}}}
	config := shPod("config", corev1.RestartPolicyNever, "true")
	config.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "x"}}}}
	running := shPod("running", corev1.RestartPolicyNever, "echo up; sleep 3600")
	for _, p := range []*corev1.Pod{neverPull, pullFails, initFirst, config, running} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	waitFor(t, time.Minute, "the running pod's output", func() (bool, error) {
		return podLog(t, s.client, "running") == "up\n", nil
	})

	waiting := func(pod string, reasons ...string) []string {
		var out []string
		for _, r := range reasons {
			out = append(out, fmt.Sprintf("container %q in pod %q is waiting to start: %s", "c0", pod, r))
		}
		return out
	}
	tests := map[string]struct {
		pod      string
		previous bool
		want     []string // one of
	}{
		"image never pulled":  {pod: "never-pull", want: waiting("never-pull", "ErrImageNeverPull")},
		"image pull failing":  {pod: "pull-fails", want: waiting("pull-fails", "image can't be pulled", "trying and failing to pull image")},
		"init container runs": {pod: "init-first", want: waiting("init-first", "PodInitializing")},
		"config error":        {pod: "config", want: waiting("config", "CreateContainerConfigError")},
		"no previous instance": {pod: "running", previous: true,
			want: []string{`previous terminated container "c0" in pod "running" not found`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var last error
			defer func() {
				if t.Failed() {
					t.Logf("last answer: %#v", last)
				}
			}()
			waitFor(t, time.Minute, tc.pod+"'s log refused", func() (bool, error) {
				// NOTE: Stream, as kubectl logs, decodes the Status of an error.
				rc, err := pods.GetLogs(tc.pod, &corev1.PodLogOptions{Previous: tc.previous}).Stream(ctx)
				if err == nil {
					rc.Close()
				}
				last = err
				var st *apierrors.StatusError
				if !errors.As(err, &st) {
					return false, nil
				}
				return slices.Contains(tc.want, st.ErrStatus.Message), nil
			})
			var st *apierrors.StatusError
			errors.As(last, &st)
			if st.ErrStatus.Code != http.StatusBadRequest || st.ErrStatus.Reason != metav1.StatusReasonBadRequest {
				t.Errorf("answered %d %s, want 400 BadRequest", st.ErrStatus.Code, st.ErrStatus.Reason)
			}
		})
	}
}
