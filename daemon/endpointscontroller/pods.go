package endpointscontroller

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiff-sh/skiff/kube"
)

// NOTE: these are the rules of Kubernetes' k8s.io/endpointslice (util
// and FindPort), which both its endpoints and EndpointSlice controllers
// use. They are restated here rather than imported: that module would
// pull component-base and a newer grpc into the whole daemon.

// shouldPodBeInEndpoints: a pod that has an IP and has not finished is an
// endpoint; a terminating one (deletionTimestamp set) only if
// includeTerminating.
func shouldPodBeInEndpoints(pod *corev1.Pod, includeTerminating bool) bool {
	switch {
	case kube.IsPodTerminal(pod):
		return false
	case pod.Status.PodIP == "" && len(pod.Status.PodIPs) == 0:
		return false
	case !includeTerminating && pod.DeletionTimestamp != nil:
		return false
	}
	return true
}

// shouldSetHostname: a pod with a hostname whose subdomain names the
// Service (in its namespace) is known by that hostname under it.
func shouldSetHostname(pod *corev1.Pod, svc *corev1.Service) bool {
	return pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name && svc.Namespace == pod.Namespace
}

// findPort is the pod's port for a Service port: the targetPort number,
// or the container port the named targetPort names (with the same
// protocol, in a container or a sidecar).
func findPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, error) {
	switch sp.TargetPort.Type {
	case intstr.Int:
		return sp.TargetPort.IntVal, nil
	case intstr.String:
		name := sp.TargetPort.StrVal
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Name == name && p.Protocol == sp.Protocol {
					return p.ContainerPort, nil
				}
			}
		}
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				continue
			}
			for _, p := range c.Ports {
				if p.Name == name && p.Protocol == sp.Protocol {
					return p.ContainerPort, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("no suitable port for manifest: %s", pod.UID)
}

// podIPv4 is the pod's IPv4 address (skiff's services are IPv4 only).
func podIPv4(pod *corev1.Pod) (string, bool) {
	ips := pod.Status.PodIPs
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []corev1.PodIP{{IP: pod.Status.PodIP}}
	}
	for _, p := range ips {
		if ip, err := netip.ParseAddr(p.IP); err == nil && ip.Unmap().Is4() {
			return ip.Unmap().String(), true
		}
	}
	return "", false
}

// isServiceIPSet reports whether the Service has a ClusterIP (is not headless).
func isServiceIPSet(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != ""
}
