package kube

import corev1 "k8s.io/api/core/v1"

// IsPodPhaseTerminal reports whether phase is Succeeded or Failed: a pod
// in it never runs a container again (kube's podutil.IsPodPhaseTerminal).
func IsPodPhaseTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// IsPodTerminal reports whether the pod reached Succeeded or Failed.
func IsPodTerminal(pod *corev1.Pod) bool { return IsPodPhaseTerminal(pod.Status.Phase) }

// ContainerStatus is the status of container name in one list of a pod's
// statuses (nil if it has none yet); it points into the list.
func ContainerStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// PodContainerStatus is the status of the pod's container name, whichever
// of the three lists (regular, init, ephemeral) holds it; nil if none does.
// Names are unique across the three (validation sees to it).
func PodContainerStatus(status *corev1.PodStatus, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses,
		status.EphemeralContainerStatuses} {
		if cs := ContainerStatus(list, name); cs != nil {
			return cs
		}
	}
	return nil
}

// ContainerKind is where a container stands in its pod's spec.
type ContainerKind int

// The kinds of containers a pod runs.
const (
	NoContainer        ContainerKind = iota // not in the spec
	RegularContainer                        // spec.containers
	InitContainer                           // spec.initContainers, run to completion in order
	SidecarContainer                        // spec.initContainers with restartPolicy Always
	EphemeralContainer                      // spec.ephemeralContainers
)

// FindContainer finds the pod's container name in any of the three lists
// of spec, and says which; an ephemeral container is seen through its
// common fields. It returns nil, NoContainer when there is none.
func FindContainer(spec *corev1.PodSpec, name string) (*corev1.Container, ContainerKind) {
	for i := range spec.Containers {
		if c := &spec.Containers[i]; c.Name == name {
			return c, RegularContainer
		}
	}
	for i := range spec.InitContainers {
		if c := &spec.InitContainers[i]; c.Name == name {
			if IsSidecar(c) {
				return c, SidecarContainer
			}
			return c, InitContainer
		}
	}
	for i := range spec.EphemeralContainers {
		if ec := &spec.EphemeralContainers[i]; ec.Name == name {
			return (*corev1.Container)(&ec.EphemeralContainerCommon), EphemeralContainer
		}
	}
	return nil, NoContainer
}

// IsSidecar reports whether the init container c is a sidecar: a
// restartable init container (restartPolicy Always), which keeps running
// beside the regular containers (kube's IsRestartableInitContainer).
func IsSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// IsPodReady reports whether the pod's Ready condition is True (kube's
// podutil.IsPodReady): what Services route to and a Job counts as ready.
func IsPodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
