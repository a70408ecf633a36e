package jobcontroller

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
)

// podsForRemoval returns the n active pods to delete first when there are
// too many: unscheduled before scheduled, pending before running, not ready
// before ready, recently ready before long ready, more restarts before
// fewer, newer before older.
//
// NOTE: Kubernetes' controller.ActivePods ordering, used by the Job
// controller's activePodsForRemoval.
func podsForRemoval(active []*corev1.Pod, n int) []*corev1.Pod {
	if n <= 0 {
		return nil
	}
	ranked := append([]*corev1.Pod(nil), active...)
	sort.SliceStable(ranked, func(i, j int) bool { return removeBefore(ranked[i], ranked[j]) })
	if n > len(ranked) {
		n = len(ranked)
	}
	return ranked[:n]
}

var phaseRank = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

func removeBefore(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if phaseRank[a.Status.Phase] != phaseRank[b.Status.Phase] {
		return phaseRank[a.Status.Phase] < phaseRank[b.Status.Phase]
	}
	if kube.IsPodReady(a) != kube.IsPodReady(b) {
		return !kube.IsPodReady(a)
	}
	if kube.IsPodReady(a) {
		if ta, tb := readySince(a), readySince(b); !ta.Equal(tb) {
			return afterOrZero(ta, tb)
		}
	}
	if ra, rb := maxRestarts(a), maxRestarts(b); ra != rb {
		return ra > rb
	}
	if ca, cb := a.CreationTimestamp.Time, b.CreationTimestamp.Time; !ca.Equal(cb) {
		return afterOrZero(ca, cb)
	}
	return false
}

// afterOrZero reports whether a is zero (and b not), or a is after b.
func afterOrZero(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b)
}

func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func maxRestarts(p *corev1.Pod) int32 {
	var m int32
	for _, s := range p.Status.ContainerStatuses {
		if s.RestartCount > m {
			m = s.RestartCount
		}
	}
	return m
}

// deletionGrace is the grace period the controller deletes a pod with.
// NOTE: the Kubernetes Job controller sends a DELETE without a grace
// period, so kube-apiserver's pod strategy decides it (kube.DeletionGrace).
func deletionGrace(p *corev1.Pod) int64 { return kube.DeletionGrace(p, nil) }
