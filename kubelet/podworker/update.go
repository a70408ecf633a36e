package podworker

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// specUpdates hands changed container definitions (a new image, the only
// change the API lets through) to the runs of a worker's containers.
// The zero value is ready to use.
type specUpdates struct {
	mu     sync.Mutex
	latest *corev1.Pod              // the newest version of the pod seen
	runs   map[string]*containerRun // regular containers and sidecars, by name
	images map[string]string        // the image each run was last given
	// metaWake is closed when the labels or annotations change (podmeta.go).
	metaWake chan struct{}
}

// track registers a container's run for definition changes; a change seen
// before the run existed is handed over at once.
func (w *worker) track(r *containerRun) {
	if r.kind == kindInit {
		// NOTE: the kubelet restarts running containers and sidecars whose
		// definition changed; a regular init container runs as it started.
		return
	}
	u := &w.specs
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.runs == nil {
		u.runs, u.images = map[string]*containerRun{}, map[string]string{}
	}
	u.runs[r.spec.Name], u.images[r.spec.Name] = r, r.spec.Image
	if u.latest != nil {
		u.offer(u.latest)
	}
}

// containersChanged hands every tracked run whose image the pod now changes
// its new definition.
func (w *worker) containersChanged(pod *corev1.Pod) {
	u := &w.specs
	u.mu.Lock()
	defer u.mu.Unlock()
	u.metaChanged(pod)
	u.latest = pod
	u.offer(pod)
	w.readinessGatesChanged(pod)
}

func (u *specUpdates) offer(pod *corev1.Pod) {
	all := [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers}
	for _, list := range all {
		for i := range list {
			c := &list[i]
			r, ok := u.runs[c.Name]
			if !ok || u.images[c.Name] == c.Image {
				continue
			}
			u.images[c.Name] = c.Image
			r.handSpec(c.DeepCopy())
		}
	}
}

// handSpec gives the run a new definition; only the latest counts.
func (r *containerRun) handSpec(c *corev1.Container) {
	select {
	case <-r.newSpec:
	default:
	}
	r.newSpec <- c
}

// useSpec makes c the container's definition (on the run's goroutine).
func (r *containerRun) useSpec(c *corev1.Container) {
	r.log.WithField("image", c.Image).Info("container definition changed")
	r.spec = c
}

// restartForSpec takes a definition that changed while an instance runs:
// the instance is stopped with the returned grace and the container
// restarts with c whatever its restart policy.
func (r *containerRun) restartForSpec(c *corev1.Container) time.Duration {
	r.log.Info("container definition changed, will be restarted")
	r.useSpec(c)
	r.specChanged = true
	return r.changeGrace()
}

// takeSpecChange reports (once) whether the definition changed while the
// last instance ran: then the container restarts at once, without back-off.
// A change that came after the instance ended is only taken for the next
// instance, if the restart policy starts one.
// NOTE: the kubelet restarts a running container whose spec hash changed
// "regardless of the restart policy", and its back-off is keyed by that
// hash, so the new definition starts without waiting.
func (r *containerRun) takeSpecChange() bool {
	select {
	case c := <-r.newSpec:
		r.useSpec(c)
	default:
	}
	changed := r.specChanged
	r.specChanged = false
	return changed
}

// changeGrace is the grace the kubelet gives a container it kills for a
// changed definition: the pod's terminationGracePeriodSeconds (at least
// minGrace).
func (r *containerRun) changeGrace() time.Duration {
	return max(deletionGrace(&corev1.Pod{Spec: r.pod.Spec}), minGrace)
}
