package kube

import (
	corev1 "k8s.io/api/core/v1"
)

// qosResources are the resources that decide a pod's QoS class.
var qosResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// ContainerRequests is what a container requests once the API server has
// defaulted it: a resource it limits without requesting it requests its
// limit (kube's SetDefaults_Pod), so the answer is the same for a pod
// stored before or after that default.
func ContainerRequests(c *corev1.Container) corev1.ResourceList {
	return requestsOf(c.Resources)
}

func requestsOf(r corev1.ResourceRequirements) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range r.Limits {
		out[name] = q.DeepCopy()
	}
	for name, q := range r.Requests {
		out[name] = q.DeepCopy()
	}
	return out
}

// QOSClass is the pod's quality of service class, as kube's ComputePodQOS
// (pkg/apis/core/v1/helper/qos) decides it from cpu and memory only, on
// requests defaulted from limits: BestEffort when nothing requests or
// limits either; Guaranteed when every container (init containers too)
// limits both and the total requests equal the total limits; Burstable
// otherwise. Pod-level resources (spec.resources, PodLevelResources is on
// in 1.34) decide alone when they are set. Ephemeral containers never
// count.
func QOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	count := func(r corev1.ResourceRequirements) {
		addPositive(requests, requestsOf(r))
		if addPositive(limits, r.Limits) < len(qosResources) {
			guaranteed = false
		}
	}
	if spec.Resources != nil {
		count(*spec.Resources)
	} else {
		for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
			for i := range list {
				count(list[i].Resources)
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	for name, req := range requests {
		if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
			guaranteed = false
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// addPositive adds the positive cpu and memory quantities of list to sum
// and returns how many of the two it found.
func addPositive(sum, list corev1.ResourceList) int {
	found := 0
	for _, name := range qosResources {
		q, ok := list[name]
		if !ok || q.Sign() <= 0 {
			continue
		}
		found++
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
	return found
}
