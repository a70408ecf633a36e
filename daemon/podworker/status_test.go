package podworker

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
}

func exited(code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func TestPodPhase(t *testing.T) {
	two := []corev1.Container{{Name: "a"}, {Name: "b"}}
	tests := map[string]struct {
		policy   corev1.RestartPolicy
		states   map[string]corev1.ContainerState
		last     map[string]corev1.ContainerState
		terminal bool
		want     corev1.PodPhase
	}{
		"nothing started":             {policy: "Never", want: corev1.PodPending},
		"creating":                    {policy: "Never", states: map[string]corev1.ContainerState{"a": waiting("ContainerCreating"), "b": waiting("ContainerCreating")}, want: corev1.PodPending},
		"one running one creating":    {policy: "Never", states: map[string]corev1.ContainerState{"a": running(), "b": waiting("ContainerCreating")}, want: corev1.PodPending},
		"both running":                {policy: "Never", states: map[string]corev1.ContainerState{"a": running(), "b": running()}, want: corev1.PodRunning},
		"one done one running":        {policy: "Never", states: map[string]corev1.ContainerState{"a": exited(0), "b": running()}, want: corev1.PodRunning},
		"never: all succeeded":        {policy: "Never", states: map[string]corev1.ContainerState{"a": exited(0), "b": exited(0)}, want: corev1.PodSucceeded},
		"never: one failed":           {policy: "Never", states: map[string]corev1.ContainerState{"a": exited(0), "b": exited(2)}, want: corev1.PodFailed},
		"onfailure: one failed":       {policy: "OnFailure", states: map[string]corev1.ContainerState{"a": exited(0), "b": exited(2)}, want: corev1.PodRunning},
		"onfailure: all succeeded":    {policy: "OnFailure", states: map[string]corev1.ContainerState{"a": exited(0), "b": exited(0)}, want: corev1.PodSucceeded},
		"onfailure: backing off":      {policy: "OnFailure", states: map[string]corev1.ContainerState{"a": exited(0), "b": waiting("CrashLoopBackOff")}, last: map[string]corev1.ContainerState{"b": exited(1)}, want: corev1.PodRunning},
		"always: all exited":          {policy: "Always", states: map[string]corev1.ContainerState{"a": exited(0), "b": exited(0)}, want: corev1.PodRunning},
		"always: stopped for good":    {policy: "Always", states: map[string]corev1.ContainerState{"a": exited(0), "b": exited(143)}, terminal: true, want: corev1.PodFailed},
		"onfailure: stopped at exit":  {policy: "OnFailure", states: map[string]corev1.ContainerState{"a": exited(0), "b": exited(0)}, terminal: true, want: corev1.PodSucceeded},
		"terminal before any start":   {policy: "Never", states: map[string]corev1.ContainerState{"a": waiting("ContainerCreating"), "b": waiting("ContainerCreating")}, terminal: true, want: corev1.PodFailed},
		"terminal with one unstarted": {policy: "Never", states: map[string]corev1.ContainerState{"a": exited(0), "b": waiting("ErrImagePull")}, terminal: true, want: corev1.PodFailed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := &corev1.PodSpec{RestartPolicy: tc.policy, Containers: two}
			var statuses []corev1.ContainerStatus
			for _, c := range two {
				st, ok := tc.states[c.Name]
				if !ok {
					continue
				}
				statuses = append(statuses, corev1.ContainerStatus{Name: c.Name, State: st, LastTerminationState: tc.last[c.Name]})
			}
			if got := podPhase(spec, statuses, tc.terminal); got != tc.want {
				t.Errorf("podPhase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSetConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}
	status := &corev1.PodStatus{Phase: corev1.PodPending}
	setCondition(status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, t0)
	setConditions(status, spec, t0)
	want := []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: t0},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t0},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [a b]", LastTransitionTime: t0},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [a b]", LastTransitionTime: t0},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t0},
	}
	if diff := cmp.Diff(want, status.Conditions); diff != "" {
		t.Fatalf("pending conditions (-want,+got):\n%s", diff)
	}

	status.Phase = corev1.PodRunning
	status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a", Ready: true}, {Name: "b", Ready: true}}
	setConditions(status, spec, t1)
	want[2] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t1}
	want[3] = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t1}
	if diff := cmp.Diff(want, status.Conditions); diff != "" {
		t.Fatalf("running conditions (-want,+got):\n%s", diff)
	}

	status.Phase = corev1.PodSucceeded
	status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a"}, {Name: "b"}}
	setConditions(status, spec, t1)
	want[0] = corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, LastTransitionTime: t1}
	want[1] = corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, Reason: "PodCompleted", LastTransitionTime: t0}
	want[2] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: t1}
	want[3] = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: t1}
	if diff := cmp.Diff(want, status.Conditions); diff != "" {
		t.Fatalf("completed conditions (-want,+got):\n%s", diff)
	}
}

func TestTerminatedReason(t *testing.T) {
	tests := map[string]struct {
		code int32
		oom  bool
		want string
	}{
		"zero":     {0, false, "Completed"},
		"non-zero": {3, false, "Error"},
		"killed":   {137, false, "Error"},
		"oom":      {137, true, "OOMKilled"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := terminatedReason(tc.code, tc.oom); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBackoffDelay(t *testing.T) {
	base, max := 10*time.Second, 5*time.Minute
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for n, w := range want {
		if got := backoffDelay(base, max, n); got != w {
			t.Errorf("backoffDelay(n=%d) = %s, want %s", n, got, w)
		}
	}
}
