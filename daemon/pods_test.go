//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// shPod is a bare Pod whose containers run `sh -c script` in the test image.
func shPod(name string, policy corev1.RestartPolicy, scripts ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 policy,
			TerminationGracePeriodSeconds: ptr(int64(1)),
			Volumes:                       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	for i, s := range scripts {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: fmt.Sprintf("c%d", i), Image: "busybox:1.35", Command: []string{"sh", "-c", s},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
		})
	}
	return pod
}

// waitPod waits until cond holds for the pod, and returns it.
func waitPod(t testing.TB, c kubernetes.Interface, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, timeout, "pod "+name+" "+what, func() (bool, error) {
		p, err := c.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return cond(p), nil
	})
	return pod
}

// containerSummary is what the tests compare of a container status.
type containerSummary struct {
	Name         string
	Running      bool
	ExitCode     int32 // of the terminated state; -1 if not terminated
	Reason       string
	RestartCount int32
}

func summarize(cs corev1.ContainerStatus) containerSummary {
	s := containerSummary{Name: cs.Name, Running: cs.State.Running != nil, ExitCode: -1, RestartCount: cs.RestartCount}
	if t := cs.State.Terminated; t != nil {
		s.ExitCode, s.Reason = t.ExitCode, t.Reason
	}
	return s
}

func TestBarePodRestartPolicies(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	// A script that fails on its first run and succeeds on the next (the
	// emptyDir outlives container restarts).
	const failOnce = "if [ -f /data/ran ]; then exit 0; fi; touch /data/ran; exit 2"
	tests := map[string]struct {
		pod       *corev1.Pod
		phase     corev1.PodPhase
		container containerSummary
	}{
		"Never keeps a failure": {
			pod:       shPod("never", corev1.RestartPolicyNever, "exit 3"),
			phase:     corev1.PodFailed,
			container: containerSummary{Name: "c0", ExitCode: 3, Reason: "Error"},
		},
		"OnFailure retries until success": {
			pod:       shPod("onfailure", corev1.RestartPolicyOnFailure, failOnce),
			phase:     corev1.PodSucceeded,
			container: containerSummary{Name: "c0", ExitCode: 0, Reason: "Completed", RestartCount: 1},
		},
		"Always restarts even a success": {
			pod:       shPod("always", corev1.RestartPolicyAlways, "if [ -f /data/ran ]; then exec sleep 3600; fi; touch /data/ran; exit 0"),
			phase:     corev1.PodRunning,
			container: containerSummary{Name: "c0", Running: true, ExitCode: -1, RestartCount: 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if _, err := s.client.CoreV1().Pods("default").Create(ctx, tc.pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			pod := waitPod(t, s.client, tc.pod.Name, time.Minute, "to settle", func(p *corev1.Pod) bool {
				return p.Status.Phase == tc.phase && len(p.Status.ContainerStatuses) == 1 &&
					summarize(p.Status.ContainerStatuses[0]) == tc.container
			})
			if pod.Spec.NodeName == "" || pod.Status.StartTime == nil {
				t.Errorf("nodeName %q, startTime %v: want the pod bound and started", pod.Spec.NodeName, pod.Status.StartTime)
			}
		})
	}
}

// TestPodImageChangeRestartsContainer: a PATCHed image restarts that
// container (and only that one) with restartCount+1, whatever the restart
// policy, as the kubelet does for a changed container definition.
func TestPodImageChangeRestartsContainer(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, shPod("img", corev1.RestartPolicyNever, "exec sleep 3600", "exec sleep 3600"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	allRunning := func(p *corev1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running == nil {
				return false
			}
		}
		return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 2
	}
	before := waitPod(t, s.client, "img", time.Minute, "running", allRunning)

	// The same image under another name is a changed definition.
	patch := `{"spec":{"containers":[{"name":"c1","image":"docker.io/library/busybox:1.35"}]}}`
	if _, err := pods.Patch(ctx, "img", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	after := waitPod(t, s.client, "img", time.Minute, "c1 restarted", func(p *corev1.Pod) bool {
		return allRunning(p) && p.Status.ContainerStatuses[1].RestartCount == 1
	})
	c0, c1 := after.Status.ContainerStatuses[0], after.Status.ContainerStatuses[1]
	if c0.RestartCount != 0 || c0.ContainerID != before.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("c0 was restarted too: %+v", c0)
	}
	if c1.ContainerID == before.Status.ContainerStatuses[1].ContainerID {
		t.Errorf("c1 has the same containerID after its restart")
	}
	if last := c1.LastTerminationState.Terminated; last == nil || last.ContainerID != before.Status.ContainerStatuses[1].ContainerID {
		t.Errorf("c1 lastState = %+v, want the killed instance", c1.LastTerminationState)
	}
	if after.Spec.Containers[1].Image != "docker.io/library/busybox:1.35" {
		t.Errorf("spec image = %q", after.Spec.Containers[1].Image)
	}

	// Anything but the image is refused with kube's message.
	_, err := pods.Patch(ctx, "img", types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"c1","args":["x"]}]}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("changing args: %v, want 422 Invalid", err)
	}
	var got []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		got = append(got, string(c.Type)+" "+c.Field)
	}
	if diff := cmp.Diff([]string{"FieldValueForbidden spec"}, got); diff != "" {
		t.Errorf("causes (-want,+got):\n%s", diff)
	}
}
