package podworker

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// The pod's labels and annotations change while it runs (they are what the
// API lets a client change in a running pod's metadata), and a container's
// downward API env reads them. As the kubelet generates each container
// instance's config from the newest pod it has, an instance is created with
// the newest labels and annotations seen, and a container waiting in
// CreateContainerConfigError (a subPathExpr expanding to nothing from a
// missing annotation) is tried again as soon as they change.

// metaChanged records pod as the newest version seen and wakes whoever
// waits on a change of the labels or annotations. Called with u.mu held.
func (u *specUpdates) metaChanged(pod *corev1.Pod) {
	prev := u.latest
	if prev != nil && maps.Equal(prev.Labels, pod.Labels) && maps.Equal(prev.Annotations, pod.Annotations) {
		return
	}
	if u.metaWake != nil {
		close(u.metaWake)
		u.metaWake = nil
	}
}

// withLatestMeta is pod with the newest labels and annotations seen (pod
// itself until a newer version came), and a channel closed at their next
// change: taken together, so that a change after the read is not missed.
func (w *worker) withLatestMeta(pod *corev1.Pod) (*corev1.Pod, <-chan struct{}) {
	u := &w.specs
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.metaWake == nil {
		u.metaWake = make(chan struct{})
	}
	if u.latest == nil || u.latest.UID != pod.UID {
		return pod, u.metaWake
	}
	p := *pod
	p.Labels, p.Annotations = u.latest.Labels, u.latest.Annotations
	return &p, u.metaWake
}
