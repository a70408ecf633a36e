package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestIsPodPhaseTerminal(t *testing.T) {
	want := map[corev1.PodPhase]bool{
		corev1.PodPending: false, corev1.PodRunning: false, corev1.PodUnknown: false, "": false,
		corev1.PodSucceeded: true, corev1.PodFailed: true,
	}
	for phase, terminal := range want {
		if got := IsPodTerminal(&corev1.Pod{Status: corev1.PodStatus{Phase: phase}}); got != terminal {
			t.Errorf("IsPodTerminal(%q) = %t, want %t", phase, got, terminal)
		}
	}
}

// podWithAllKinds has a container of every kind, and a status for each.
func podWithAllKinds() *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	return &corev1.Pod{
		Spec: corev1.PodSpec{
			InitContainers:      []corev1.Container{{Name: "init"}, {Name: "sidecar", RestartPolicy: &always}},
			Containers:          []corev1.Container{{Name: "app"}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
		},
		Status: corev1.PodStatus{
			InitContainerStatuses:      []corev1.ContainerStatus{{Name: "init", RestartCount: 1}, {Name: "sidecar", RestartCount: 2}},
			ContainerStatuses:          []corev1.ContainerStatus{{Name: "app", RestartCount: 3}},
			EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "debug", RestartCount: 4}},
		},
	}
}

func TestFindContainerAndStatus(t *testing.T) {
	pod := podWithAllKinds()
	type found struct {
		Name     string
		Kind     ContainerKind
		Restarts int32
	}
	tests := map[string]found{
		"app":     {"app", RegularContainer, 3},
		"init":    {"init", InitContainer, 1},
		"sidecar": {"sidecar", SidecarContainer, 2},
		"debug":   {"debug", EphemeralContainer, 4},
		"missing": {"", NoContainer, -1},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			got := found{Restarts: -1}
			var c *corev1.Container
			c, got.Kind = FindContainer(&pod.Spec, name)
			if c != nil {
				got.Name = c.Name
			}
			if cs := PodContainerStatus(&pod.Status, name); cs != nil {
				got.Restarts = cs.RestartCount
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
	// The status points into the pod: a caller changes it in place.
	PodContainerStatus(&pod.Status, "debug").Ready = true
	if !pod.Status.EphemeralContainerStatuses[0].Ready {
		t.Error("PodContainerStatus returned a copy")
	}
}

// TestContainerRestarts runs the cases of kube's TestShouldContainerBeRestarted
// (pkg/kubelet/container) for a container that exited, and the kubelet's
// rules for init containers, sidecars and ephemeral containers.
func TestContainerRestarts(t *testing.T) {
	policies := []corev1.RestartPolicy{corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure, corev1.RestartPolicyAlways}
	tests := map[string]struct {
		container string
		exitCode  int32
		want      []bool // under Never, OnFailure, Always
	}{
		"regular, succeeded":   {"app", 0, []bool{false, false, true}},
		"regular, failed":      {"app", 1, []bool{false, true, true}},
		"regular, failed 3":    {"app", 3, []bool{false, true, true}},
		"init, succeeded":      {"init", 0, []bool{false, false, false}},
		"init, failed":         {"init", 1, []bool{false, true, true}},
		"sidecar, succeeded":   {"sidecar", 0, []bool{true, true, true}},
		"sidecar, failed":      {"sidecar", 137, []bool{true, true, true}},
		"ephemeral, failed":    {"debug", 1, []bool{false, false, false}},
		"not in the pod":       {"gone", 1, []bool{false, false, false}},
		"not in the pod, zero": {"gone", 0, []bool{false, false, false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := podWithAllKinds()
			var got []bool
			for _, p := range policies {
				pod.Spec.RestartPolicy = p
				got = append(got, ContainerRestarts(&pod.Spec, tc.container, tc.exitCode))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("restarts under Never, OnFailure, Always (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestIsSidecar(t *testing.T) {
	for policy, want := range map[*corev1.ContainerRestartPolicy]bool{
		nil: false, ptr.To(corev1.ContainerRestartPolicyAlways): true,
		ptr.To(corev1.ContainerRestartPolicy("Never")): false,
	} {
		if got := IsSidecar(&corev1.Container{RestartPolicy: policy}); got != want {
			t.Errorf("IsSidecar(restartPolicy %v) = %t, want %t", ptr.Deref(policy, "<nil>"), got, want)
		}
	}
}

func TestIsPodReady(t *testing.T) {
	cond := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s}
	}
	tests := map[string]struct {
		conds []corev1.PodCondition
		want  bool
	}{
		"no conditions":         {},
		"ready":                 {conds: []corev1.PodCondition{cond(corev1.PodScheduled, "True"), cond(corev1.PodReady, "True")}, want: true},
		"not ready":             {conds: []corev1.PodCondition{cond(corev1.PodReady, "False")}},
		"unknown":               {conds: []corev1.PodCondition{cond(corev1.PodReady, "Unknown")}},
		"containers ready only": {conds: []corev1.PodCondition{cond(corev1.ContainersReady, "True")}},
	}
	for name, tc := range tests {
		if got := IsPodReady(&corev1.Pod{Status: corev1.PodStatus{Conditions: tc.conds}}); got != tc.want {
			t.Errorf("%s: IsPodReady = %t, want %t", name, got, tc.want)
		}
	}
}
