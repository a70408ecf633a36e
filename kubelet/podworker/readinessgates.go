package podworker

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/kube"
)

// readinessGatesChanged writes the pod's Ready condition again when a
// client changed the status of a condition one of its readiness gates
// names (through pods/status), so that Ready follows the gates, as the
// kubelet's status manager regenerates it from the pod it is sent.
func (w *worker) readinessGatesChanged(pod *corev1.Pod) {
	if len(pod.Spec.ReadinessGates) == 0 || kube.IsPodTerminal(pod) || !isScheduled(&pod.Status) {
		return
	}
	want := pod.DeepCopy()
	setConditions(want, metav1.NewTime(w.m.now()))
	if readiness(want) == readiness(pod) {
		return
	}
	// NOTE: off the manager's watch loop, which hands the worker its
	// updates; the write reads the pod again and settles its conditions.
	go func() {
		if _, err := w.update(func(*corev1.Pod) {}); err != nil {
			w.logError("recording readiness gates", err)
		}
	}()
}

// readiness is what the Ready condition says, its times left out.
func readiness(pod *corev1.Pod) [3]string {
	if c := findCondition(&pod.Status, corev1.PodReady); c != nil {
		return [3]string{string(c.Status), c.Reason, c.Message}
	}
	return [3]string{}
}
