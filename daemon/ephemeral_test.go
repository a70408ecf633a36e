//go:build integration

package daemon_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// addEphemeral adds an ephemeral container through the subresource.
func addEphemeral(t *testing.T, s *skiffd, pod *corev1.Pod, ec corev1.EphemeralContainer) {
	t.Helper()
	ctx := context.Background()
	p, err := s.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
	if _, err := s.client.CoreV1().Pods(pod.Namespace).UpdateEphemeralContainers(ctx, pod.Name, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// ephemeralStatus waits until the ephemeral container's status satisfies ok.
func ephemeralStatus(t *testing.T, s *skiffd, pod *corev1.Pod, name, what string, ok func(cs corev1.ContainerStatus) bool) corev1.ContainerStatus {
	t.Helper()
	var got corev1.ContainerStatus
	waitFor(t, 60*time.Second, "ephemeral container "+name+" "+what, func() (bool, error) {
		p, err := s.client.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cs := range p.Status.EphemeralContainerStatuses {
			if cs.Name == name {
				got = cs
				return ok(cs), nil
			}
		}
		return false, nil
	})
	return got
}

func isRunning(cs corev1.ContainerStatus) bool { return cs.State.Running != nil }

// TestEphemeralContainerAcrossRestart: an ephemeral container keeps running
// while skiffd restarts, its exit is recorded afterwards, and it is never
// started again.
func TestEphemeralContainerAcrossRestart(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	kubectl := newStreamKubectl(t, "kubectl", s)
	pod := runningJobPod(t, s, "sleeper", corev1.Container{Command: []string{"sh", "-c", "exec sleep 3600"}})
	addEphemeral(t, s, pod, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "dbg", Image: "busybox:1.35", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		Command: []string{"sh", "-c", `trap "exit 7" TERM; echo debugging; while true; do sleep 0.1; done`},
	}})
	before := ephemeralStatus(t, s, pod, "dbg", "running", isRunning)

	s.stop()
	s.start()
	after := ephemeralStatus(t, s, pod, "dbg", "running after the restart", isRunning)
	if after.ContainerID != before.ContainerID || !after.State.Running.StartedAt.Equal(&before.State.Running.StartedAt) {
		t.Errorf("after the restart: %s started %v, want %s started %v", after.ContainerID, after.State.Running.StartedAt,
			before.ContainerID, before.State.Running.StartedAt)
	}
	kubectl.mustRun("", "exec", pod.Name, "-c", "dbg", "--", "kill", "1")
	exited := ephemeralStatus(t, s, pod, "dbg", "terminated", func(cs corev1.ContainerStatus) bool { return cs.State.Terminated != nil })
	if term := exited.State.Terminated; term.ExitCode != 7 || term.Reason != "Error" || exited.RestartCount != 0 {
		t.Errorf("terminated %+v, restarts %d; want exit 7, Error, no restart", term, exited.RestartCount)
	}
	if out := kubectl.mustRun("", "logs", pod.Name, "-c", "dbg"); out != "debugging\n" {
		t.Errorf("logs of the ephemeral container: %q", out)
	}
}

// TestEphemeralContainerStopsWithThePod: when the pod's own containers are
// done, a still-running ephemeral container is stopped and the Job completes.
func TestEphemeralContainerStopsWithThePod(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	kubectl := newStreamKubectl(t, "kubectl", s)
	pod := runningJobPod(t, s, "waiter", corev1.Container{Command: []string{"sh", "-c", "until [ -f /tmp/done ]; do sleep 0.1; done"}})
	addEphemeral(t, s, pod, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "dbg", Image: "busybox:1.35", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		Command: []string{"sleep", "3600"},
	}})
	ephemeralStatus(t, s, pod, "dbg", "running", isRunning)
	kubectl.mustRun("", "exec", pod.Name, "--", "touch", "/tmp/done")
	waitJob(t, s.client, "default", "waiter", "Complete", 60*time.Second)
	exited := ephemeralStatus(t, s, pod, "dbg", "terminated", func(cs corev1.ContainerStatus) bool { return cs.State.Terminated != nil })
	if code := exited.State.Terminated.ExitCode; code != 137 && code != 143 {
		t.Errorf("ephemeral container exited %d, want killed (137 or 143)", code)
	}
	p, err := s.client.CoreV1().Pods("default").Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("pod phase %s, want Succeeded", p.Status.Phase)
	}
}
