package podworker

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
)

// Reasons the kubelet writes into pod and container status.
const (
	reasonCompleted          = "Completed"
	reasonError              = "Error"
	reasonOOMKilled          = "OOMKilled"
	reasonStartError         = "StartError"
	reasonContainerCreating  = "ContainerCreating"
	reasonPodInitializing    = "PodInitializing"
	reasonCrashLoopBackOff   = "CrashLoopBackOff"
	reasonErrImagePull       = "ErrImagePull"
	reasonImagePullBackOff   = "ImagePullBackOff"
	reasonErrImageNeverPull  = "ErrImageNeverPull"
	reasonCreateConfig       = "CreateContainerConfigError"
	reasonCreateContainer    = "CreateContainerError"
	reasonRunContainer       = "RunContainerError"
	reasonContainersNotRdy   = "ContainersNotReady"
	reasonNotInitialized     = "ContainersNotInitialized"
	reasonPodCompleted       = "PodCompleted"
	reasonPodFailed          = "PodFailed"
	reasonStatusUnknown      = "ContainerStatusUnknown"
	reasonFailedSync         = "FailedSync" // the kubelet's event when a pod sync fails
	reasonDeadlineExceeded   = "DeadlineExceeded"
	reasonUnschedulable      = "Unschedulable"
	reasonTerminationKubelet = "TerminationByKubelet"
	// A failed postStart hook: the event's reason, and the waiting reason
	// (the kubelet's ErrPostStartHook) until the container restarts.
	reasonFailedPostStartHook = "FailedPostStartHook"
	reasonPostStartHookError  = "PostStartHookError"
)

// messageLost is the kubelet's message for a container it cannot find.
const messageLost = "The container could not be located when the pod was terminated"

// terminatedReason is the reason containerd's CRI gives a container that exited.
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

// podPhase computes the phase from the container statuses as the kubelet's
// getPhase does (without the alpha ContainerRestartRules). terminal is true
// once the worker has decided that no container will run again (deletion,
// deadline, nothing left to restart); initialized reports that a regular
// container has been started, so that restarting sidecars do not send the
// pod back to Pending.
func podPhase(spec *corev1.PodSpec, initStatuses, statuses []corev1.ContainerStatus, terminal, initialized bool) corev1.PodPhase {
	pendingInit, failedInit, pendingSidecars := initCounts(spec, initStatuses)
	var unknown, running, waiting, stopped, succeeded int
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !kube.IsSidecar(c) {
			continue
		}
		cs := kube.ContainerStatus(initStatuses, c.Name)
		switch {
		case cs == nil:
			unknown++
		case cs.State.Running != nil:
			running++
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil:
			waiting++
		}
	}
	for _, c := range spec.Containers {
		cs := kube.ContainerStatus(statuses, c.Name)
		switch {
		case cs == nil:
			unknown++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			stopped++
		case cs.State.Waiting != nil:
			waiting++
		default:
			unknown++
		}
	}
	if failedInit > 0 && spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && !initialized) || waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal || spec.RestartPolicy == corev1.RestartPolicyNever ||
			(spec.RestartPolicy == corev1.RestartPolicyOnFailure && stopped == succeeded) {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		return corev1.PodRunning // restarting
	default:
		return corev1.PodPending
	}
}

// initCounts counts, as getPhase does, the regular init containers still to
// complete, those that failed, and the sidecars not yet started.
func initCounts(spec *corev1.PodSpec, statuses []corev1.ContainerStatus) (pending, failed, pendingSidecars int) {
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		cs := kube.ContainerStatus(statuses, c.Name)
		if kube.IsSidecar(c) {
			switch {
			case cs == nil:
				pendingSidecars++
			case cs.State.Running != nil:
				if cs.Started == nil || !*cs.Started {
					pendingSidecars++
				}
			case cs.State.Waiting != nil && cs.LastTerminationState.Terminated == nil:
				pendingSidecars++
			}
			continue
		}
		switch {
		case cs == nil || cs.State.Running != nil:
			pending++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failed++
			}
		case cs.LastTerminationState.Terminated != nil:
			if cs.LastTerminationState.Terminated.ExitCode != 0 {
				failed++
			}
		default:
			pending++
		}
	}
	return pending, failed, pendingSidecars
}

// hasStartedRegular reports whether a regular container has ever been
// created: the pod is past its initialization.
func hasStartedRegular(statuses []corev1.ContainerStatus) bool {
	for _, cs := range statuses {
		if cs.ContainerID != "" || cs.State.Waiting == nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// terminateStatus settles the status of a pod whose containers are all
// stopped for good, as the kubelet's status manager does in TerminatePod:
// once the pod has initialized, a container that never reported an exit is
// failed with ContainerStatusUnknown, so are init containers that were
// tried; and a pod not yet Succeeded or Failed becomes Failed.
func terminateStatus(spec *corev1.PodSpec, status *corev1.PodStatus) {
	lost := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		Reason: reasonStatusUnknown, Message: messageLost, ExitCode: 137,
	}}
	if len(spec.InitContainers) == 0 || hasStartedRegular(status.ContainerStatuses) || lastInitDone(spec, status.InitContainerStatuses) {
		for i := range status.ContainerStatuses {
			if status.ContainerStatuses[i].State.Terminated == nil {
				status.ContainerStatuses[i].State = lost
			}
		}
	}
	tried := len(status.InitContainerStatuses)
	for tried > 0 {
		cs := status.InitContainerStatuses[tried-1]
		if cs.State.Waiting == nil || cs.LastTerminationState.Terminated != nil {
			break
		}
		tried--
	}
	for i := range status.InitContainerStatuses[:tried] {
		if status.InitContainerStatuses[i].State.Terminated == nil {
			status.InitContainerStatuses[i].State = lost
		}
	}
	if status.Phase != corev1.PodSucceeded {
		status.Phase = corev1.PodFailed
	}
}

// lastInitDone reports whether the last init container completed (or, for
// a sidecar, started).
func lastInitDone(spec *corev1.PodSpec, statuses []corev1.ContainerStatus) bool {
	n := len(spec.InitContainers)
	if n == 0 {
		return true
	}
	c := &spec.InitContainers[n-1]
	cs := kube.ContainerStatus(statuses, c.Name)
	switch {
	case cs == nil:
		return false
	case kube.IsSidecar(c):
		return cs.State.Running != nil && cs.Started != nil && *cs.Started
	}
	for _, st := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
		if st.Terminated != nil && st.Terminated.ExitCode == 0 {
			return true
		}
	}
	return false
}

// sortStatuses orders statuses as the containers are in the spec.
func sortStatuses(statuses []corev1.ContainerStatus, containers []corev1.Container) {
	index := make(map[string]int, len(containers))
	for i, c := range containers {
		index[c.Name] = i
	}
	sort.SliceStable(statuses, func(i, j int) bool { return index[statuses[i].Name] < index[statuses[j].Name] })
}
