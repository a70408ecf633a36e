package admission

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
)

// podRequests is what the pod asks of the node, as the scheduler computes
// it (resourcehelper.PodRequests): the regular containers and sidecars add
// up; each init container needs its own request plus the sidecars started
// before it; the pod needs the larger of the two, plus its overhead.
func podRequests(spec *corev1.PodSpec) corev1.ResourceList {
	reqs := corev1.ResourceList{}
	for i := range spec.Containers {
		addResources(reqs, kube.ContainerRequests(&spec.Containers[i]))
	}
	sidecars := corev1.ResourceList{}
	initMax := corev1.ResourceList{}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		own := kube.ContainerRequests(c)
		if kube.IsSidecar(c) {
			addResources(reqs, own)
			addResources(sidecars, own)
			own = sidecars.DeepCopy()
		} else {
			addResources(own, sidecars)
		}
		maxResources(initMax, own)
	}
	maxResources(reqs, initMax)
	addResources(reqs, spec.Overhead)
	return reqs
}

func addResources(into, add corev1.ResourceList) {
	for name, q := range add {
		sum := into[name]
		sum.Add(q)
		into[name] = sum
	}
}

func subtractResources(from, sub corev1.ResourceList) {
	for name, q := range sub {
		diff := from[name]
		diff.Sub(q)
		from[name] = diff
	}
}

func maxResources(into, other corev1.ResourceList) {
	for name, q := range other {
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}
