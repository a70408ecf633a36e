package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func runningStatus(name string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

// TestAttemptDecisionInitContainers: a follower of an init container or a
// sidecar moves on as the kubelet restarts them, not as the pod's
// restartPolicy would restart a regular container.
func TestAttemptDecisionInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	tests := map[string]struct {
		policy   corev1.RestartPolicy
		init     corev1.Container
		exitCode int32
		wantDone bool
	}{
		"init succeeded under Always: done":    {policy: "Always", init: corev1.Container{Name: "i"}, exitCode: 0, wantDone: true},
		"init failed under Always: waiting":    {policy: "Always", init: corev1.Container{Name: "i"}, exitCode: 1},
		"init failed under Never: done":        {policy: "Never", init: corev1.Container{Name: "i"}, exitCode: 1, wantDone: true},
		"sidecar exited under Never: waiting":  {policy: "Never", init: corev1.Container{Name: "i", RestartPolicy: &always}, exitCode: 0},
		"sidecar failed under OnFailure: wait": {policy: "OnFailure", init: corev1.Container{Name: "i", RestartPolicy: &always}, exitCode: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{
				Spec: corev1.PodSpec{RestartPolicy: tc.policy, InitContainers: []corev1.Container{tc.init},
					Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{Name: "i",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: tc.exitCode}}}}},
			}
			if _, _, done := attemptDecision(pod, "i", 0, func(int) bool { return false }); done != tc.wantDone {
				t.Errorf("done %v, want %v", done, tc.wantDone)
			}
		})
	}
}

func TestAttemptDecision(t *testing.T) {
	terminated := func(code int32, restarts int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: "c", RestartCount: restarts,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
	}
	tests := map[string]struct {
		policy   corev1.RestartPolicy
		phase    corev1.PodPhase
		status   corev1.ContainerStatus
		wantNext int
		wantOK   bool
		wantDone bool
		noFile   bool
	}{
		"restarted, no file yet":      {policy: "Always", phase: "Running", status: runningStatus("c", 1), noFile: true},
		"still running":               {policy: "Always", phase: "Running", status: runningStatus("c", 0)},
		"restarted":                   {policy: "Always", phase: "Running", status: runningStatus("c", 1), wantNext: 1, wantOK: true, wantDone: true},
		"pod finished":                {policy: "Always", phase: "Succeeded", status: terminated(0, 0), wantDone: true},
		"never restarts":              {policy: "Never", phase: "Running", status: terminated(1, 0), wantDone: true},
		"on failure, succeeded":       {policy: "OnFailure", phase: "Running", status: terminated(0, 0), wantDone: true},
		"on failure, failed: waiting": {policy: "OnFailure", phase: "Running", status: terminated(1, 0)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy, Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: tc.phase, ContainerStatuses: []corev1.ContainerStatus{tc.status}}}
			next, ok, done := attemptDecision(pod, "c", 0, func(int) bool { return !tc.noFile })
			if next != tc.wantNext || ok != tc.wantOK || done != tc.wantDone {
				t.Errorf("got (%d, %v, %v), want (%d, %v, %v)", next, ok, done, tc.wantNext, tc.wantOK, tc.wantDone)
			}
		})
	}
}
