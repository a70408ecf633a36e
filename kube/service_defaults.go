package kube

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// prepareService is what kube-apiserver does to a Service before
// validating it: its defaulting, then (old is nil on create) the Service
// registry's fix-ups of the linked clusterIP/clusterIPs/ipFamilies fields.
func prepareService(svc, old *corev1.Service) {
	defaultService(svc)
	if old != nil {
		keepAllocatedClusterIPs(svc, old)
	}
	normalizeClusterIPs(svc, old)
	defaultIPFamilies(svc, old)
}

// defaultService is kube's SetDefaults_Service: sessionAffinity None (with
// a 3h ClientIP timeout when ClientIP), type ClusterIP, each port TCP with
// targetPort = port, internalTrafficPolicy Cluster, and for the types that
// reach outside the node externalTrafficPolicy Cluster and
// allocateLoadBalancerNodePorts.
func defaultService(svc *corev1.Service) {
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		if c := spec.SessionAffinityConfig; c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)}}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if isExternallyAccessible(svc) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil && spec.Type != corev1.ServiceTypeExternalName {
		spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		spec.AllocateLoadBalancerNodePorts = ptr.To(true)
	}
}

// isExternallyAccessible: a LoadBalancer or NodePort Service, or one with
// externalIPs (kube's service.ExternallyAccessible).
func isExternallyAccessible(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeClusterIP:
		return len(svc.Spec.ExternalIPs) > 0
	}
	return false
}

// isHeadless reports whether the Service has clusterIP None.
func isHeadless(svc *corev1.Service) bool {
	return len(svc.Spec.ClusterIPs) == 1 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// keepAllocatedClusterIPs is kube's patchAllocatedValues: an update that
// leaves the ClusterIPs out keeps the ones the Service has.
func keepAllocatedClusterIPs(svc, old *corev1.Service) {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if svc.Spec.ClusterIP == "" {
		svc.Spec.ClusterIP = old.Spec.ClusterIP
	}
	if len(svc.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
		svc.Spec.ClusterIPs = slices.Clone(old.Spec.ClusterIPs)
	}
}

// normalizeClusterIPs is kube's normalizeClusterIPs: clients that set only
// clusterIP get clusterIPs to match.
func normalizeClusterIPs(svc, old *corev1.Service) {
	spec := &svc.Spec
	if old == nil {
		if spec.ClusterIP != "" && len(spec.ClusterIPs) == 0 {
			spec.ClusterIPs = []string{spec.ClusterIP}
		}
		return
	}
	if old.Spec.ClusterIP == spec.ClusterIP {
		if len(old.Spec.ClusterIPs) > 0 && len(spec.ClusterIPs) == 0 {
			spec.ClusterIPs = slices.Clone(old.Spec.ClusterIPs) // a client that knows only clusterIP
		}
		return
	}
	if !slices.Equal(old.Spec.ClusterIPs, spec.ClusterIPs) {
		return // both changed: validation decides
	}
	if spec.ClusterIP == "" {
		spec.ClusterIPs = nil // cleared by a client that knows only clusterIP
	} else {
		spec.ClusterIPs = []string{spec.ClusterIP}
	}
}

// defaultIPFamilies is the defaulting half of kube's initIPFamilyFields
// on a single-stack IPv4 cluster (validateServiceFamilies is the other
// half): ipFamilyPolicy SingleStack (RequireDualStack for a headless
// Service without selector, as kube does), ipFamilies inferred from the
// clusterIPs, else IPv4.
func defaultIPFamilies(svc, old *corev1.Service) {
	spec := &svc.Spec
	if spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	if spec.IPFamilyPolicy == nil {
		switch {
		case old != nil && old.Spec.IPFamilyPolicy != nil:
			spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
		case spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0:
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
		default:
			spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
		}
	}
	if len(validateClusterIPFields(svc, old)) > 0 {
		return // validation reports it; nothing sensible to infer
	}
	if old != nil && *spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack {
		if slices.Equal(old.Spec.ClusterIPs, spec.ClusterIPs) && len(spec.ClusterIPs) > 1 {
			spec.ClusterIPs = spec.ClusterIPs[:1]
		}
		if slices.Equal(old.Spec.IPFamilies, spec.IPFamilies) && len(spec.IPFamilies) > 1 {
			spec.IPFamilies = spec.IPFamilies[:1]
		}
	}
	for i, s := range spec.ClusterIPs {
		if s == corev1.ClusterIPNone {
			break
		}
		if fam := familyOf(s); i >= len(spec.IPFamilies) && fam == corev1.IPv4Protocol {
			spec.IPFamilies = append(spec.IPFamilies, fam)
		}
	}
	if spec.ClusterIP == corev1.ClusterIPNone && len(spec.Selector) == 0 {
		if len(spec.IPFamilies) == 0 {
			spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		}
		if len(spec.IPFamilies) < 2 && *spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
			other := corev1.IPv6Protocol
			if spec.IPFamilies[0] == corev1.IPv6Protocol {
				other = corev1.IPv4Protocol
			}
			spec.IPFamilies = append(spec.IPFamilies, other)
		}
		return
	}
	if len(spec.IPFamilies) == 0 {
		spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}
}

// familyOf is the family of a valid IP address.
func familyOf(s string) corev1.IPFamily {
	if ip, err := netip.ParseAddr(s); err == nil && ip.Is6() && !ip.Is4In6() {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}
