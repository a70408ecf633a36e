package podworker

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/runtime"
)

// An instance (pod UID, container, attempt) moves through created →
// started → exited → removed (see package runtime). The worker decides
// what to do with one from durable facts alone — containerd's record of
// the container and its task, and the store's status of the container —
// the same way when it first meets the instance after a restart of skiffd
// and whenever an operation on it failed for a transient reason:
//
//	the store holds its exit        → done: remove what is left, go on with that exit
//	its task runs                   → adopt: wait for its exit
//	its task cannot be read         → read it again (its shim does not
//	                                  answer: it may run or have exited)
//	its task exited                 → record that exit, then remove it
//	it started, its exit is gone    → record it lost (ContainerStatusUnknown)
//	its task was made, not started  → start that task (a start request cut
//	                                  short may still reach it: whichever
//	                                  start comes first runs it, once)
//	it never started                → create (over any leftovers) and start it
//
// The invariant: an instance whose exit the store holds, or that started,
// is never started again; every exit that containerd reports is recorded
// once before the instance is removed.

// instanceFacts are the durable facts about one instance.
type instanceFacts struct {
	// found: containerd has the container; state and exit are then its.
	found       bool
	state       runtime.ContainerState
	taskCreated bool // StateCreated with a task made and never started
	exit        *runtime.ExitStatus
	// recorded: the store holds this instance's exit.
	recorded bool
	// storeStarted: the store shows this instance started.
	storeStarted bool
}

// instanceStep is what the worker does next with an instance.
type instanceStep int

const (
	stepCreate instanceStep = iota // never started: create and start it
	stepStart                      // its task was made: start it
	stepAdopt                      // its task runs: wait for the exit
	stepRecord                     // its task exited: record the exit, remove it
	stepLost                       // started, exit gone: record it lost, remove it
	stepDone                       // exit recorded: remove it, go on
	stepRead                       // its task cannot be read: read it again
)

func (s instanceStep) String() string {
	return [...]string{"create", "start", "adopt", "record", "lost", "done", "read"}[s]
}

// nextStep decides from the facts alone (see the table above).
func nextStep(f instanceFacts) instanceStep {
	switch {
	case f.recorded:
		return stepDone
	case !f.found && f.storeStarted:
		return stepLost // containerd lost it (a reboot cleared its state)
	case !f.found:
		return stepCreate
	}
	switch f.state {
	case runtime.StateRunning:
		return stepAdopt
	case runtime.StateUnknown:
		return stepRead
	case runtime.StateExited:
		if f.exit == nil {
			return stepLost
		}
		return stepRecord
	case runtime.StateFinished:
		return stepLost
	default: // StateCreated
		switch {
		case f.storeStarted:
			return stepLost // it ran; its task is gone with containerd's state
		case f.taskCreated:
			return stepStart
		}
		return stepCreate
	}
}

// recordedExit returns the terminated state the store holds for instance
// id of the container status cs, if any: its current state, or the last
// one when a restart is pending.
func recordedExit(cs *corev1.ContainerStatus, id string) *corev1.ContainerStateTerminated {
	if cs == nil || id == "" {
		return nil
	}
	cid := kube.ContainerID(id)
	for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
		if t == nil {
			continue
		}
		if t.ContainerID == cid || (t.ContainerID == "" && t == cs.State.Terminated && cs.ContainerID == cid) {
			return t
		}
	}
	return nil
}

// storeStarted reports whether the store shows instance id started.
func storeStarted(cs *corev1.ContainerStatus, id string) bool {
	return cs != nil && id != "" && cs.ContainerID == kube.ContainerID(id) && cs.State.Running != nil
}

// instanceIDOf is the containerd ID in a status's containerID.
func instanceIDOf(containerID string) string {
	id, _ := kube.ParseContainerID(containerID)
	return id
}

// infraBackoff is the wait before retrying an operation that failed for a
// transient reason: 200ms doubling to 10s.
func infraBackoff(failures int) time.Duration {
	d := 200 * time.Millisecond
	for i := 0; i < failures && d < 10*time.Second; i++ {
		d *= 2
	}
	return min(d, 10*time.Second)
}
