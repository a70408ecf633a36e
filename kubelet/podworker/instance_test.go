package podworker

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/runtime"
)

// TestNextStep is the recovery decision table: what the worker does with
// an instance, given where containerd and the store say it stood.
func TestNextStep(t *testing.T) {
	exit0 := &runtime.ExitStatus{Code: 0}
	tests := map[string]struct {
		facts instanceFacts
		want  instanceStep
	}{
		"nothing anywhere: never ran":                {instanceFacts{}, stepCreate},
		"killed after snapshot prepare":              {instanceFacts{}, stepCreate},
		"killed after container create":              {instanceFacts{found: true, state: runtime.StateCreated}, stepCreate},
		"killed with a task made, never started":     {instanceFacts{found: true, state: runtime.StateCreated, taskCreated: true}, stepStart},
		"containerd restarted during the task start": {instanceFacts{found: true, state: runtime.StateCreated, taskCreated: true}, stepStart},
		"killed after task start, still running":     {instanceFacts{found: true, state: runtime.StateRunning}, stepAdopt},
		"running and recorded as running":            {instanceFacts{found: true, state: runtime.StateRunning, storeStarted: true}, stepAdopt},
		"exited while skiffd was down":               {instanceFacts{found: true, state: runtime.StateExited, exit: exit0, storeStarted: true}, stepRecord},
		"exited before the running status was kept":  {instanceFacts{found: true, state: runtime.StateExited, exit: exit0}, stepRecord},
		"killed inside the exit's status write":      {instanceFacts{found: true, state: runtime.StateExited, exit: exit0, storeStarted: true}, stepRecord},
		"killed after the exit was recorded":         {instanceFacts{found: true, state: runtime.StateExited, exit: exit0, recorded: true}, stepDone},
		"killed between task and container delete":   {instanceFacts{found: true, state: runtime.StateFinished, recorded: true}, stepDone},
		"task gone, exit recorded, restart pending":  {instanceFacts{found: true, state: runtime.StateFinished, recorded: true}, stepDone},
		"task gone after start, exit not recorded":   {instanceFacts{found: true, state: runtime.StateFinished}, stepLost},
		"removed entirely, exit recorded":            {instanceFacts{recorded: true}, stepDone},
		"containerd lost a running instance":         {instanceFacts{storeStarted: true}, stepLost},
		"containerd state gone, container left":      {instanceFacts{found: true, state: runtime.StateCreated, storeStarted: true}, stepLost},
		"unreadable container (exited, no exit)":     {instanceFacts{found: true, state: runtime.StateExited}, stepLost},
		"task stopped before it was asked to start":  {instanceFacts{found: true, state: runtime.StateCreated}, stepCreate},
		"recorded wins over a running task":          {instanceFacts{found: true, state: runtime.StateRunning, recorded: true}, stepDone},
		"its shim not answering after a restart":     {instanceFacts{found: true, state: runtime.StateUnknown, storeStarted: true}, stepRead},
		"its shim not answering, running not kept":   {instanceFacts{found: true, state: runtime.StateUnknown}, stepRead},
		"recorded wins over a task not answering":    {instanceFacts{found: true, state: runtime.StateUnknown, recorded: true}, stepDone},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := nextStep(tc.facts); got != tc.want {
				t.Errorf("nextStep(%+v) = %v, want %v", tc.facts, got, tc.want)
			}
		})
	}
}

func TestRecordedExit(t *testing.T) {
	const id = "abc"
	cid := kube.ContainerID(id)
	term := func(cid string, code int32) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ContainerID: cid, ExitCode: code}
	}
	tests := map[string]struct {
		cs   *corev1.ContainerStatus
		want *corev1.ContainerStateTerminated
	}{
		"no status": {nil, nil},
		"terminated, this instance": {&corev1.ContainerStatus{ContainerID: cid,
			State: corev1.ContainerState{Terminated: term(cid, 3)}}, term(cid, 3)},
		"waiting to restart after this instance": {&corev1.ContainerStatus{ContainerID: cid,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: term(cid, 1)}}, term(cid, 1)},
		"lost: recorded without its own containerID": {&corev1.ContainerStatus{ContainerID: cid,
			State: corev1.ContainerState{Terminated: term("", 137)}}, term("", 137)},
		"running: not recorded": {&corev1.ContainerStatus{ContainerID: cid,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, nil},
		"an earlier instance's exit": {&corev1.ContainerStatus{ContainerID: kube.ContainerID("old"),
			State: corev1.ContainerState{Terminated: term(kube.ContainerID("old"), 0)}}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, recordedExit(tc.cs, id)); diff != "" {
				t.Errorf("recordedExit (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestInfraBackoff(t *testing.T) {
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}
	for i, w := range want {
		if got := infraBackoff(i); got != w {
			t.Errorf("infraBackoff(%d) = %v, want %v", i, got, w)
		}
	}
	if got := infraBackoff(50); got != 10*time.Second {
		t.Errorf("infraBackoff(50) = %v, want the 10s cap", got)
	}
}
