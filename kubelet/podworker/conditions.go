package podworker

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/kube"
)

// setConditions recomputes the kubelet-owned pod conditions from the phase
// and container statuses (the kubelet's status.Generate*Condition),
// changing lastTransitionTime only on a change of status.
//
// NOTE: PodObservedGenerationTracking is beta (on) in Kubernetes 1.34: the
// kubelet stamps its conditions and status.observedGeneration with the
// pod's metadata.generation.
func setConditions(pod *corev1.Pod, now metav1.Time) {
	status, spec := &pod.Status, &pod.Spec
	status.ObservedGeneration = pod.Generation
	done := kube.IsPodPhaseTerminal(status.Phase)
	sandbox := corev1.ConditionTrue
	if done {
		sandbox = corev1.ConditionFalse
	}
	gen := pod.Generation
	setCondition(status, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: sandbox, ObservedGeneration: gen}, now)
	init := initializedCondition(spec, status)
	init.ObservedGeneration = gen
	setCondition(status, init, now)
	ready := containersReadyCondition(spec, status)
	ready.ObservedGeneration = gen
	podReady := readyCondition(spec, status, ready)
	setCondition(status, podReady, now)
	setCondition(status, ready, now)
	for i := range status.Conditions {
		if status.Conditions[i].Type == corev1.PodScheduled {
			status.Conditions[i].ObservedGeneration = gen
		}
	}
	sortConditions(status.Conditions)
}

// initializedCondition is the kubelet's GeneratePodInitializedCondition.
func initializedCondition(spec *corev1.PodSpec, status *corev1.PodStatus) corev1.PodCondition {
	cond := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	var unknown, incomplete []string
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		cs := kube.ContainerStatus(status.InitContainerStatuses, c.Name)
		switch {
		case cs == nil:
			unknown = append(unknown, c.Name)
		case kube.IsSidecar(c) && (cs.Started == nil || !*cs.Started):
			incomplete = append(incomplete, c.Name)
		case !kube.IsSidecar(c) && !cs.Ready:
			incomplete = append(incomplete, c.Name)
		}
	}
	if status.Phase == corev1.PodSucceeded && len(unknown) == 0 {
		cond.Reason = reasonPodCompleted
		return cond
	}
	if hasRunRegular(status.ContainerStatuses) {
		return cond
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(incomplete) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with incomplete status: %s", incomplete))
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, reasonNotInitialized, strings.Join(msgs, ", ")
	}
	return cond
}

// hasRunRegular reports whether a regular container is running or has run
// (the kubelet's HasAnyRegularContainerStarted).
func hasRunRegular(statuses []corev1.ContainerStatus) bool {
	for _, cs := range statuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}

// containersReadyCondition is the kubelet's GenerateContainersReadyCondition:
// sidecars and regular containers must all be ready.
func containersReadyCondition(spec *corev1.PodSpec, status *corev1.PodStatus) corev1.PodCondition {
	cond := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}
	var unknown, unready []string
	check := func(c *corev1.Container, statuses []corev1.ContainerStatus) {
		cs := kube.ContainerStatus(statuses, c.Name)
		switch {
		case cs == nil:
			unknown = append(unknown, c.Name)
		case !cs.Ready:
			unready = append(unready, c.Name)
		}
	}
	for i := range spec.InitContainers {
		if kube.IsSidecar(&spec.InitContainers[i]) {
			check(&spec.InitContainers[i], status.InitContainerStatuses)
		}
	}
	for i := range spec.Containers {
		check(&spec.Containers[i], status.ContainerStatuses)
	}
	switch {
	case status.Phase == corev1.PodSucceeded && len(unknown) == 0:
		cond.Status, cond.Reason = corev1.ConditionFalse, reasonPodCompleted
		return cond
	case status.Phase == corev1.PodFailed:
		cond.Status, cond.Reason = corev1.ConditionFalse, reasonPodFailed
		return cond
	}
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(unready) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unready status: %s", unready))
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, reasonContainersNotRdy, strings.Join(msgs, ", ")
	}
	return cond
}

// readyCondition is the kubelet's GeneratePodReadyCondition: as
// ContainersReady, and then every readiness gate's condition must be True.
func readyCondition(spec *corev1.PodSpec, status *corev1.PodStatus, containersReady corev1.PodCondition) corev1.PodCondition {
	cond := containersReady
	cond.Type = corev1.PodReady
	if cond.Status != corev1.ConditionTrue {
		return cond
	}
	var msgs []string
	for _, rg := range spec.ReadinessGates {
		c := findCondition(status, rg.ConditionType)
		switch {
		case c == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(rg.ConditionType)))
		case c.Status != corev1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(rg.ConditionType), c.Status))
		}
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, "ReadinessGatesNotReady", strings.Join(msgs, ", ")
	}
	return cond
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

// findCondition returns the pod's condition of type t, or nil.
func findCondition(status *corev1.PodStatus, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range status.Conditions {
		if status.Conditions[i].Type == t {
			return &status.Conditions[i]
		}
	}
	return nil
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
