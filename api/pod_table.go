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

// decodePodCells reads into pod the fields podCells reads (kube.FindContainer
// reads the containers' names and the init containers' restartPolicy), from
// its stored JSON (TestStoredTableIsTheEncodedTable).
func decodePodCells(c *jsonCursor, pod *corev1.Pod) {
	c.fields(func(key []byte) {
		switch string(key) {
		case "metadata":
			decodeCellMetadata(c, &pod.ObjectMeta)
		case "spec":
			decodePodCellSpec(c, &pod.Spec)
		case "status":
			decodePodCellStatus(c, &pod.Status)
		}
	})
}

func decodePodCellSpec(c *jsonCursor, spec *corev1.PodSpec) {
	c.fields(func(key []byte) {
		switch string(key) {
		case "containers":
			c.each(func() {
				spec.Containers = append(spec.Containers, corev1.Container{Name: decodeName(c)})
			})
		case "initContainers":
			c.each(func() {
				var ct corev1.Container
				c.fields(func(key []byte) {
					switch string(key) {
					case "name":
						ct.Name = c.str()
					case "restartPolicy":
						if p := c.strp(); p != nil {
							ct.RestartPolicy = (*corev1.ContainerRestartPolicy)(p)
						}
					}
				})
				spec.InitContainers = append(spec.InitContainers, ct)
			})
		case "ephemeralContainers":
			c.each(func() {
				var ec corev1.EphemeralContainer
				ec.Name = decodeName(c)
				spec.EphemeralContainers = append(spec.EphemeralContainers, ec)
			})
		case "nodeName":
			spec.NodeName = c.str()
		case "readinessGates":
			c.each(func() {
				var g corev1.PodReadinessGate
				c.fields(func(key []byte) {
					if string(key) == "conditionType" {
						g.ConditionType = corev1.PodConditionType(c.str())
					}
				})
				spec.ReadinessGates = append(spec.ReadinessGates, g)
			})
		}
	})
}

// decodeName reads an object's "name" field and skips the rest.
func decodeName(c *jsonCursor) (name string) {
	c.fields(func(key []byte) {
		if string(key) == "name" {
			name = c.str()
		}
	})
	return name
}

func decodePodCellStatus(c *jsonCursor, status *corev1.PodStatus) {
	c.fields(func(key []byte) {
		switch string(key) {
		case "phase":
			status.Phase = corev1.PodPhase(c.str())
		case "reason":
			status.Reason = c.str()
		case "podIP":
			status.PodIP = c.str()
		case "nominatedNodeName":
			status.NominatedNodeName = c.str()
		case "conditions":
			c.each(func() {
				var cond corev1.PodCondition
				c.fields(func(key []byte) {
					switch string(key) {
					case "type":
						cond.Type = corev1.PodConditionType(c.str())
					case "status":
						cond.Status = corev1.ConditionStatus(c.str())
					case "reason":
						cond.Reason = c.str()
					}
				})
				status.Conditions = append(status.Conditions, cond)
			})
		case "containerStatuses":
			status.ContainerStatuses = decodeCellContainerStatuses(c)
		case "initContainerStatuses":
			status.InitContainerStatuses = decodeCellContainerStatuses(c)
		}
	})
}

func decodeCellContainerStatuses(c *jsonCursor) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	c.each(func() {
		var cs corev1.ContainerStatus
		c.fields(func(key []byte) {
			switch string(key) {
			case "name":
				cs.Name = c.str()
			case "ready":
				cs.Ready = c.boolean()
			case "started":
				cs.Started = c.boolp()
			case "restartCount":
				cs.RestartCount = c.int32()
			case "state":
				cs.State = decodeCellContainerState(c)
			case "lastState":
				cs.LastTerminationState = decodeCellContainerState(c)
			}
		})
		out = append(out, cs)
	})
	return out
}

// decodeCellContainerState reads which state a container is in, the
// waiting reason and how it terminated.
func decodeCellContainerState(c *jsonCursor) corev1.ContainerState {
	var st corev1.ContainerState
	c.fields(func(key []byte) {
		switch string(key) {
		case "waiting":
			if c.null() {
				return
			}
			st.Waiting = &corev1.ContainerStateWaiting{}
			c.fields(func(key []byte) {
				if string(key) == "reason" {
					st.Waiting.Reason = c.str()
				}
			})
		case "running":
			if c.null() {
				return
			}
			st.Running = &corev1.ContainerStateRunning{}
			c.skip()
		case "terminated":
			if c.null() {
				return
			}
			t := &corev1.ContainerStateTerminated{}
			c.fields(func(key []byte) {
				switch string(key) {
				case "exitCode":
					t.ExitCode = c.int32()
				case "signal":
					t.Signal = c.int32()
				case "reason":
					t.Reason = c.str()
				case "finishedAt":
					t.FinishedAt = c.time()
				}
			})
			st.Terminated = t
		}
	})
	return st
}

// podCells is one pod's row. NOTE: a Table written from the stored JSON
// has only the fields decodePodCells reads: read a new one here, read it
// there.
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
