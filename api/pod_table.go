package api

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/kube"
)

// podColumns are kube's pod columns (priority 1 = kubectl -o wide).
var podColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
	{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
	{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
	ageColumn,
	{Name: "IP", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["podIP"]},
	{Name: "Node", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["nodeName"]},
	{Name: "Nominated Node", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]},
	{Name: "Readiness Gates", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["readinessGates"]},
}

// podCellFields are the fields podCells reads (kube.FindContainer reads
// the containers' names and the init containers' restartPolicy).
var podCellFields = projection{
	"metadata": {"name": nil, "creationTimestamp": nil, "deletionTimestamp": nil},
	"spec": {"containers": {"name": nil}, "initContainers": {"name": nil, "restartPolicy": nil},
		"ephemeralContainers": {"name": nil}, "nodeName": nil, "readinessGates": nil},
	"status": {"phase": nil, "reason": nil, "conditions": nil, "podIP": nil, "nominatedNodeName": nil,
		"containerStatuses": nil, "initContainerStatuses": nil},
}

// podCells is one pod's row.
func podCells(pod *corev1.Pod, now time.Time) []any {
	ready, total, restarts, lastRestart := podCounts(pod)
	restartCell := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartCell = fmt.Sprintf("%d (%s ago)", restarts, age(metav1.NewTime(lastRestart), now))
	}
	return []any{
		pod.Name,
		fmt.Sprintf("%d/%d", ready, total),
		podStatus(pod),
		restartCell,
		age(pod.CreationTimestamp, now),
		noneIfEmpty(pod.Status.PodIP),
		noneIfEmpty(pod.Spec.NodeName),
		noneIfEmpty(pod.Status.NominatedNodeName),
		readinessGates(pod),
	}
}

// podCounts counts ready containers, restarts and the last restart time
// (of the init containers while the pod initializes).
func podCounts(pod *corev1.Pod) (ready, total, restarts int, last time.Time) {
	total = len(pod.Spec.Containers)
	statuses := pod.Status.ContainerStatuses
	if isInitializing(pod) {
		statuses = pod.Status.InitContainerStatuses
	}
	for _, cs := range statuses {
		restarts += int(cs.RestartCount)
		if t := cs.LastTerminationState.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Ready && cs.State.Running != nil {
			ready++
		}
	}
	return ready, total, restarts, last
}

// isInitializing reports whether an init container is still to finish.
func isInitializing(pod *corev1.Pod) bool {
	_, init := initStatus(pod)
	return init
}

// initStatus is the STATUS of a pod whose init containers are not done
// ("Init:0/2", "Init:Error", "Init:CrashLoopBackOff", …).
func initStatus(pod *corev1.Pod) (string, bool) {
	for i, cs := range pod.Status.InitContainerStatuses {
		_, kind := kube.FindContainer(&pod.Spec, cs.Name)
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case kind == kube.SidecarContainer && cs.Started != nil && *cs.Started:
			continue
		case cs.State.Terminated != nil:
			return "Init:" + terminatedReason(cs.State.Terminated), true
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			return "Init:" + cs.State.Waiting.Reason, true
		default:
			return fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers)), true
		}
	}
	return "", false
}

// terminatedReason is a terminated container's reason, or Signal:N /
// ExitCode:N when it has none.
func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	}
	return fmt.Sprintf("ExitCode:%d", t.ExitCode)
}

// podStatus is the STATUS column as kubectl and kube's printers compute it.
func podStatus(pod *corev1.Pod) string {
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}
	init, initializing := initStatus(pod)
	if initializing {
		reason = init
	} else {
		reason = containersStatus(pod, reason)
	}
	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == "NodeLost":
			reason = "Unknown"
		case !kube.IsPodTerminal(pod):
			reason = "Terminating"
		}
	}
	return reason
}

// containersStatus refines reason from the containers, the last one first
// so that the first container's state wins.
func containersStatus(pod *corev1.Pod, reason string) string {
	running := false
	for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
		cs := pod.Status.ContainerStatuses[i]
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			reason = cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			reason = terminatedReason(cs.State.Terminated)
		case cs.Ready && cs.State.Running != nil:
			running = true
		}
	}
	if reason == "Completed" && running {
		reason = "NotReady"
		if kube.IsPodReady(pod) {
			reason = "Running"
		}
	}
	return reason
}

// readinessGates is "<ready>/<total>" of the pod's readiness gates.
func readinessGates(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	ready := 0
	for _, g := range pod.Spec.ReadinessGates {
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return fmt.Sprintf("%d/%d", ready, len(pod.Spec.ReadinessGates))
}
