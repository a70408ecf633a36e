package kube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// defaultPodSpec applies kube-apiserver's defaults to a pod spec (of a Pod
// or of a Job's or a PodTemplate's template).
func defaultPodSpec(spec *corev1.PodSpec) {
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	// NOTE: kube's v1 conversion: the deprecated serviceAccount names the
	// account when serviceAccountName does not, and always mirrors it.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	defaultVolumeSources(spec.Volumes)
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
}

// defaultContainer applies the container defaults.
func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = defaultPullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	defaultEnvSources(c.Env)
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
}

// defaultPullPolicy is Always for an untagged or :latest image (unless it
// is pinned by digest), IfNotPresent otherwise.
func defaultPullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	tag := ""
	if i := strings.LastIndex(image, ":"); i >= 0 && !strings.Contains(image[i:], "/") {
		tag = image[i+1:]
	}
	if tag == "" || tag == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// defaultPod applies kube's SetDefaults_Pod and SetDefaults_PodSpec to a
// Pod a client sent (on create and on update, as kube-apiserver defaults
// every Pod it decodes): the pod spec defaults, requests that follow the
// limits a container sets without requesting, enableServiceLinks, and on
// the host network ports whose host port is their container port. A Job's
// template gets only the spec defaults: these are a Pod's alone.
//
// NOTE: the pod-level requests defaulted from pod-level limits
// (PodLevelResources) are left out: skiff applies pod-level resources to
// the QoS class only.
func defaultPod(pod *corev1.Pod) {
	spec := &pod.Spec
	defaultPodSpec(spec)
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			defaultRequests(&list[i].Resources)
			if spec.HostNetwork {
				defaultHostNetworkPorts(list[i].Ports)
			}
		}
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	// NOTE: kube-apiserver's conversion of a Pod (not of a template) turns
	// a negative terminationGracePeriodSeconds into 1, on the way in and
	// out; validation accepts any value (a template keeps its negative one,
	// with a warning).
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	}
}

// defaultRequests requests what r limits without requesting it.
func defaultRequests(r *corev1.ResourceRequirements) {
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[name] = q.DeepCopy()
	}
}

// defaultHostNetworkPorts makes each port without a host port listen on
// its container port, as it does on the host's network.
func defaultHostNetworkPorts(ports []corev1.ContainerPort) {
	for i := range ports {
		if ports[i].HostPort == 0 {
			ports[i].HostPort = ports[i].ContainerPort
		}
	}
}
