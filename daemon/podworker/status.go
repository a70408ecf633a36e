package podworker

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons the kubelet writes into pod and container status.
const (
	reasonCompleted         = "Completed"
	reasonError             = "Error"
	reasonOOMKilled         = "OOMKilled"
	reasonContainerCreating = "ContainerCreating"
	reasonCrashLoopBackOff  = "CrashLoopBackOff"
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
	reasonErrImageNeverPull = "ErrImageNeverPull"
	reasonCreateContainer   = "CreateContainerError"
	reasonRunContainer      = "RunContainerError"
	reasonContainersNotRdy  = "ContainersNotReady"
	reasonPodCompleted      = "PodCompleted"
	reasonStatusUnknown     = "ContainerStatusUnknown"
)

// terminatedReason is the reason the kubelet gives a container that exited.
func terminatedReason(exitCode int32, oomKilled bool) string {
	switch {
	case oomKilled:
		return reasonOOMKilled
	case exitCode == 0:
		return reasonCompleted
	default:
		return reasonError
	}
}

// shouldRestart reports whether a container that exited with exitCode is
// started again under the pod's restartPolicy.
func shouldRestart(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyAlways:
		return true
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return false
	}
}

// podPhase computes the phase from the container statuses the way the
// kubelet's getPhase does for a pod without init containers. terminal is
// true once the worker has stopped every container for good (deletion or
// no restart left), which settles restartPolicy Always and OnFailure pods.
//
// NOTE: a waiting container that has run before (it has a lastState) counts
// as stopped, not waiting: it is between restarts, so the pod stays Running.
func podPhase(spec *corev1.PodSpec, statuses []corev1.ContainerStatus, terminal bool) corev1.PodPhase {
	var waiting, running, stopped, succeeded int
	for _, name := range containerNames(spec) {
		cs := findStatus(statuses, name)
		switch {
		case cs == nil:
			waiting++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.LastTerminationState.Terminated != nil:
			stopped++
			if cs.LastTerminationState.Terminated.ExitCode == 0 {
				succeeded++
			}
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0 && !terminal:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped == 0:
		if terminal {
			return corev1.PodFailed
		}
		return corev1.PodPending
	}
	// Every container has stopped.
	if terminal || spec.RestartPolicy == corev1.RestartPolicyNever {
		if stopped == succeeded && waiting == 0 {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	}
	if spec.RestartPolicy == corev1.RestartPolicyOnFailure && stopped == succeeded {
		return corev1.PodSucceeded
	}
	return corev1.PodRunning
}

func containerNames(spec *corev1.PodSpec) []string {
	names := make([]string, 0, len(spec.Containers))
	for _, c := range spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

func findStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// setConditions recomputes the kubelet-owned pod conditions from the phase
// and container statuses, changing lastTransitionTime only on a change of
// status, as the kubelet does.
func setConditions(status *corev1.PodStatus, spec *corev1.PodSpec, now metav1.Time) {
	done := status.Phase == corev1.PodSucceeded || status.Phase == corev1.PodFailed
	sandbox := corev1.ConditionTrue
	if done {
		sandbox = corev1.ConditionFalse
	}
	setCondition(status, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: sandbox}, now)

	initialized := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	if done {
		initialized.Reason = reasonPodCompleted
	}
	setCondition(status, initialized, now)

	ready := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}
	var unready []string
	for _, name := range containerNames(spec) {
		cs := findStatus(status.ContainerStatuses, name)
		if cs == nil || !cs.Ready {
			unready = append(unready, name)
		}
	}
	switch {
	case done:
		ready.Status, ready.Reason = corev1.ConditionFalse, reasonPodCompleted
	case len(unready) > 0:
		ready.Status, ready.Reason = corev1.ConditionFalse, reasonContainersNotRdy
		ready.Message = fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	podReady := ready
	podReady.Type = corev1.PodReady
	setCondition(status, podReady, now)
	setCondition(status, ready, now)
	sortConditions(status.Conditions)
}

// setCondition replaces or adds c, keeping lastTransitionTime when the
// status did not change.
func setCondition(status *corev1.PodStatus, c corev1.PodCondition, now metav1.Time) {
	for i := range status.Conditions {
		old := &status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status || c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
		*old = c
		return
	}
	c.LastTransitionTime = now
	status.Conditions = append(status.Conditions, c)
}

// conditionOrder is the order in which the kubelet lists pod conditions.
var conditionOrder = map[corev1.PodConditionType]int{
	corev1.DisruptionTarget:          0,
	corev1.PodReadyToStartContainers: 1,
	corev1.PodInitialized:            2,
	corev1.PodReady:                  3,
	corev1.ContainersReady:           4,
	corev1.PodScheduled:              5,
}

func sortConditions(conds []corev1.PodCondition) {
	sort.SliceStable(conds, func(i, j int) bool {
		oi, iok := conditionOrder[conds[i].Type]
		oj, jok := conditionOrder[conds[j].Type]
		if !iok || !jok {
			return iok && !jok
		}
		return oi < oj
	})
}

// isTerminal reports whether the pod reached Succeeded or Failed.
func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}
