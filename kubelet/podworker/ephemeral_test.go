package podworker

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestEphemeralLookups(t *testing.T) {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "sidecar"}},
		Containers:     []corev1.Container{{Name: "app"}, {Name: "done"}},
		EphemeralContainers: []corev1.EphemeralContainer{
			{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg"}, TargetContainerName: "app"},
			{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "plain"}},
		},
	}
	status := corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "sidecar", State: running, ContainerID: "containerd://s1"}},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", State: running, ContainerID: "containerd://a1"},
			{Name: "done", ContainerID: "containerd://d1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}},
		},
		EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "dbg", State: running, ContainerID: "containerd://e1"}},
	}
	type got struct {
		Ephemeral bool
		Target    string
		RunningID string
		Running   bool
	}
	tests := map[string]got{
		"app":     {RunningID: "a1", Running: true},
		"sidecar": {RunningID: "s1", Running: true},
		"done":    {},
		"dbg":     {Ephemeral: true, Target: "app"}, // an ephemeral container is no target
		"plain":   {Ephemeral: true},
		"nope":    {},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			id, ok := runningContainerID(&status, name)
			g := got{Ephemeral: isEphemeral(&spec, name), Target: ephemeralTarget(&spec, name), RunningID: id, Running: ok}
			if diff := cmp.Diff(want, g); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestEphemeralRunsWaitForTheWorker(t *testing.T) {
	w := &worker{}
	pod := &corev1.Pod{Spec: corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{
		{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg"}}}}}
	// Before the worker lets them run, a new ephemeral container is only
	// remembered; after stopEphemeral, none starts.
	w.ephemeralChanged(pod)
	if len(w.ephemeral.runs) != 0 || w.ephemeral.latest != pod {
		t.Fatalf("runs %v, latest %v before the worker runs", w.ephemeral.runs, w.ephemeral.latest)
	}
	w.stopEphemeral(0)
	w.ephemeral.ctx = t.Context()
	w.ephemeralChanged(pod)
	if len(w.ephemeral.runs) != 0 {
		t.Fatalf("runs %v after the pod's containers are done", w.ephemeral.runs)
	}
}
