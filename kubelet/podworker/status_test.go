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

// st is a container status; started says Started (for sidecars).
type st struct {
	state   corev1.ContainerState
	last    corev1.ContainerState
	started bool
	ready   bool
}

func statusesOf(m map[string]st, containers []corev1.Container) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range containers {
		s, ok := m[c.Name]
		if !ok {
			continue
		}
		out = append(out, corev1.ContainerStatus{Name: c.Name, State: s.state, LastTerminationState: s.last, Started: ptr(s.started), Ready: s.ready})
	}
	return out
}

var sidecarPolicy = ptr(corev1.ContainerRestartPolicyAlways)

func TestPodPhase(t *testing.T) {
	two := []corev1.Container{{Name: "a"}, {Name: "b"}}
	inits := []corev1.Container{{Name: "i"}, {Name: "side", RestartPolicy: sidecarPolicy}}
	tests := map[string]struct {
		policy      corev1.RestartPolicy
		init        []corev1.Container
		initStates  map[string]st
		states      map[string]st
		terminal    bool
		initialized bool
		want        corev1.PodPhase
	}{
		"nothing started":            {policy: "Never", want: corev1.PodPending},
		"creating":                   {policy: "Never", states: map[string]st{"a": {state: waiting("ContainerCreating")}, "b": {state: waiting("ContainerCreating")}}, want: corev1.PodPending},
		"one running one creating":   {policy: "Never", states: map[string]st{"a": {state: running()}, "b": {state: waiting("ContainerCreating")}}, want: corev1.PodPending},
		"both running":               {policy: "Never", states: map[string]st{"a": {state: running()}, "b": {state: running()}}, want: corev1.PodRunning},
		"one done one running":       {policy: "Never", states: map[string]st{"a": {state: exited(0)}, "b": {state: running()}}, want: corev1.PodRunning},
		"never: all succeeded":       {policy: "Never", states: map[string]st{"a": {state: exited(0)}, "b": {state: exited(0)}}, want: corev1.PodSucceeded},
		"never: one failed":          {policy: "Never", states: map[string]st{"a": {state: exited(0)}, "b": {state: exited(2)}}, want: corev1.PodFailed},
		"onfailure: one failed":      {policy: "OnFailure", states: map[string]st{"a": {state: exited(0)}, "b": {state: exited(2)}}, want: corev1.PodRunning},
		"onfailure: all succeeded":   {policy: "OnFailure", states: map[string]st{"a": {state: exited(0)}, "b": {state: exited(0)}}, want: corev1.PodSucceeded},
		"onfailure: backing off":     {policy: "OnFailure", states: map[string]st{"a": {state: exited(0)}, "b": {state: waiting("CrashLoopBackOff"), last: exited(1)}}, want: corev1.PodRunning},
		"always: all exited":         {policy: "Always", states: map[string]st{"a": {state: exited(0)}, "b": {state: exited(0)}}, want: corev1.PodRunning},
		"always: stopped for good":   {policy: "Always", states: map[string]st{"a": {state: exited(0)}, "b": {state: exited(143)}}, terminal: true, want: corev1.PodFailed},
		"onfailure: stopped at exit": {policy: "OnFailure", states: map[string]st{"a": {state: exited(0)}, "b": {state: exited(0)}}, terminal: true, want: corev1.PodSucceeded},
		"terminal before any start":  {policy: "Never", states: map[string]st{"a": {state: waiting("ContainerCreating")}, "b": {state: waiting("ContainerCreating")}}, terminal: true, want: corev1.PodPending},
		"init running": {
			policy: "Never", init: inits[:1],
			initStates: map[string]st{"i": {state: running()}},
			states:     map[string]st{"a": {state: waiting("PodInitializing")}, "b": {state: waiting("PodInitializing")}},
			want:       corev1.PodPending,
		},
		"init failed, never": {
			policy: "Never", init: inits[:1],
			initStates: map[string]st{"i": {state: exited(1)}},
			states:     map[string]st{"a": {state: waiting("PodInitializing")}, "b": {state: waiting("PodInitializing")}},
			want:       corev1.PodFailed,
		},
		"init failed, onfailure: pending while it retries": {
			policy: "OnFailure", init: inits[:1],
			initStates: map[string]st{"i": {state: waiting("CrashLoopBackOff"), last: exited(1)}},
			states:     map[string]st{"a": {state: waiting("PodInitializing")}, "b": {state: waiting("PodInitializing")}},
			want:       corev1.PodPending,
		},
		"sidecar not started yet": {
			policy: "Never", init: inits,
			initStates: map[string]st{"i": {state: exited(0)}, "side": {state: running()}},
			states:     map[string]st{"a": {state: waiting("PodInitializing")}, "b": {state: waiting("PodInitializing")}},
			want:       corev1.PodPending,
		},
		"sidecar beside running containers": {
			policy: "Never", init: inits,
			initStates: map[string]st{"i": {state: exited(0)}, "side": {state: running(), started: true}},
			states:     map[string]st{"a": {state: running()}, "b": {state: running()}},
			want:       corev1.PodRunning,
		},
		"sidecar running after the containers are done": {
			policy: "Never", init: inits,
			initStates: map[string]st{"i": {state: exited(0)}, "side": {state: running(), started: true}},
			states:     map[string]st{"a": {state: exited(0)}, "b": {state: exited(0)}},
			want:       corev1.PodRunning,
		},
		"sidecar stopped after the containers are done": {
			policy: "Never", init: inits, terminal: true,
			initStates: map[string]st{"i": {state: exited(0)}, "side": {state: exited(143)}},
			states:     map[string]st{"a": {state: exited(0)}, "b": {state: exited(0)}},
			want:       corev1.PodSucceeded,
		},
		"sidecar restarting once initialized": {
			policy: "Always", init: inits, initialized: true,
			initStates: map[string]st{"i": {state: exited(0)}, "side": {state: running()}},
			states:     map[string]st{"a": {state: running()}, "b": {state: running()}},
			want:       corev1.PodRunning,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := &corev1.PodSpec{RestartPolicy: tc.policy, Containers: two, InitContainers: tc.init}
			got := podPhase(spec, statusesOf(tc.initStates, tc.init), statusesOf(tc.states, two), tc.terminal, tc.initialized)
			if got != tc.want {
				t.Errorf("podPhase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestTerminateStatus(t *testing.T) {
	lost := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "ContainerStatusUnknown", Message: messageLost, ExitCode: 137}}
	inits := []corev1.Container{{Name: "i1"}, {Name: "i2"}}
	tests := map[string]struct {
		init       []corev1.Container
		phase      corev1.PodPhase
		initStates map[string]st
		states     map[string]st
		wantPhase  corev1.PodPhase
		wantInit   map[string]corev1.ContainerState
		want       map[string]corev1.ContainerState
	}{
		"never started": {
			phase: corev1.PodPending, states: map[string]st{"a": {state: waiting("ContainerCreating")}},
			wantPhase: corev1.PodFailed, want: map[string]corev1.ContainerState{"a": lost},
		},
		"succeeded stays": {
			phase: corev1.PodSucceeded, states: map[string]st{"a": {state: exited(0)}},
			wantPhase: corev1.PodSucceeded, want: map[string]corev1.ContainerState{"a": exited(0)},
		},
		"stopped during init": {
			init: inits, phase: corev1.PodPending,
			initStates: map[string]st{"i1": {state: running()}, "i2": {state: waiting("PodInitializing")}},
			states:     map[string]st{"a": {state: waiting("PodInitializing")}},
			wantPhase:  corev1.PodFailed,
			wantInit:   map[string]corev1.ContainerState{"i1": lost, "i2": waiting("PodInitializing")},
			want:       map[string]corev1.ContainerState{"a": waiting("PodInitializing")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}, InitContainers: tc.init}
			status := &corev1.PodStatus{
				Phase:                 tc.phase,
				InitContainerStatuses: statusesOf(tc.initStates, tc.init),
				ContainerStatuses:     statusesOf(tc.states, spec.Containers),
			}
			terminateStatus(spec, status)
			if status.Phase != tc.wantPhase {
				t.Errorf("phase = %s, want %s", status.Phase, tc.wantPhase)
			}
			got := map[string]corev1.ContainerState{}
			for _, cs := range status.ContainerStatuses {
				got[cs.Name] = cs.State
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("containers (-want,+got):\n%s", diff)
			}
			gotInit := map[string]corev1.ContainerState{}
			for _, cs := range status.InitContainerStatuses {
				gotInit[cs.Name] = cs.State
			}
			if len(tc.wantInit) == 0 {
				tc.wantInit = map[string]corev1.ContainerState{}
			}
			if diff := cmp.Diff(tc.wantInit, gotInit); diff != "" {
				t.Errorf("init containers (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSetConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Generation: 1},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
		Status: corev1.PodStatus{
			Phase:             corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "a"}, {Name: "b"}},
		},
	}
	setCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, t0)
	setConditions(pod, t0)
	want := []corev1.PodCondition{
		{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: t0, ObservedGeneration: 1},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: t0, ObservedGeneration: 1},
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [a b]", LastTransitionTime: t0, ObservedGeneration: 1},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [a b]", LastTransitionTime: t0, ObservedGeneration: 1},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t0, ObservedGeneration: 1},
	}
	if diff := cmp.Diff(want, pod.Status.Conditions); diff != "" {
		t.Fatalf("pending conditions (-want,+got):\n%s", diff)
	}
	if pod.Status.ObservedGeneration != 1 {
		t.Errorf("observedGeneration = %d, want 1", pod.Status.ObservedGeneration)
	}

	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a", Ready: true}, {Name: "b", Ready: true}}
	setConditions(pod, t1)
	want[2] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: t1, ObservedGeneration: 1}
	want[3] = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: t1, ObservedGeneration: 1}
	if diff := cmp.Diff(want, pod.Status.Conditions); diff != "" {
		t.Fatalf("running conditions (-want,+got):\n%s", diff)
	}

	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a"}, {Name: "b"}}
	setConditions(pod, t1)
	want[0] = corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse, LastTransitionTime: t1, ObservedGeneration: 1}
	want[1] = corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, Reason: "PodCompleted", LastTransitionTime: t0, ObservedGeneration: 1}
	want[2] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: t1, ObservedGeneration: 1}
	want[3] = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: t1, ObservedGeneration: 1}
	if diff := cmp.Diff(want, pod.Status.Conditions); diff != "" {
		t.Fatalf("completed conditions (-want,+got):\n%s", diff)
	}

	pod.Status.Phase = corev1.PodFailed
	setConditions(pod, t1)
	want[1].Reason = ""
	want[2].Reason, want[3].Reason = "PodFailed", "PodFailed"
	if diff := cmp.Diff(want, pod.Status.Conditions); diff != "" {
		t.Fatalf("failed conditions (-want,+got):\n%s", diff)
	}
}

func TestInitializedCondition(t *testing.T) {
	inits := []corev1.Container{{Name: "a"}, {Name: "side", RestartPolicy: sidecarPolicy}, {Name: "b"}}
	tests := map[string]struct {
		initStates map[string]st
		states     map[string]st
		want       corev1.PodCondition
	}{
		"first running": {
			initStates: map[string]st{"a": {state: running()}, "side": {state: waiting("PodInitializing")}, "b": {state: waiting("PodInitializing")}},
			states:     map[string]st{"main": {state: waiting("PodInitializing")}},
			want: corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
				Message: "containers with incomplete status: [a side b]"},
		},
		"sidecar started, last running": {
			initStates: map[string]st{"a": {state: exited(0), ready: true}, "side": {state: running(), started: true}, "b": {state: running()}},
			states:     map[string]st{"main": {state: waiting("PodInitializing")}},
			want: corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
				Message: "containers with incomplete status: [b]"},
		},
		"one unknown": {
			initStates: map[string]st{"a": {state: exited(0), ready: true}, "side": {state: running(), started: true}},
			states:     map[string]st{"main": {state: waiting("PodInitializing")}},
			want: corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, Reason: "ContainersNotInitialized",
				Message: "containers with unknown status: [b]"},
		},
		"all done": {
			initStates: map[string]st{"a": {state: exited(0), ready: true}, "side": {state: running(), started: true}, "b": {state: exited(0), ready: true}},
			states:     map[string]st{"main": {state: waiting("PodInitializing")}},
			want:       corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		},
		"sidecar restarting after the start": {
			initStates: map[string]st{"a": {state: exited(0), ready: true}, "side": {state: waiting("CrashLoopBackOff"), last: exited(1)}, "b": {state: exited(0), ready: true}},
			states:     map[string]st{"main": {state: running()}},
			want:       corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := &corev1.PodSpec{InitContainers: inits, Containers: []corev1.Container{{Name: "main"}}}
			status := &corev1.PodStatus{
				Phase:                 corev1.PodPending,
				InitContainerStatuses: statusesOf(tc.initStates, inits),
				ContainerStatuses:     statusesOf(tc.states, spec.Containers),
			}
			if diff := cmp.Diff(tc.want, initializedCondition(spec, status)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
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

func TestReadyConditionGates(t *testing.T) {
	spec := &corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}}
	status := &corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionFalse}}}
	got := readyCondition(spec, status, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue})
	want := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady",
		Message: `the status of pod readiness gate "example.com/lb" is not "True", but False, corresponding condition of pod readiness gate "example.com/dns" does not exist.`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	status.Conditions = []corev1.PodCondition{{Type: "example.com/lb", Status: corev1.ConditionTrue}, {Type: "example.com/dns", Status: corev1.ConditionTrue}}
	if got := readyCondition(spec, status, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}); got.Status != corev1.ConditionTrue {
		t.Errorf("all gates True: %+v", got)
	}
}
