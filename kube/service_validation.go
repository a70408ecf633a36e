package kube

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// servedServiceTypes are the Service types skiff serves; the others are
// valid Kubernetes but refused here (no node ports, no load balancers, no
// external names on one node).
var servedServiceTypes = []corev1.ServiceType{corev1.ServiceTypeClusterIP}

// maxClientIPAffinitySeconds bounds sessionAffinityConfig.clientIP.timeoutSeconds (a day, as kube).
const maxClientIPAffinitySeconds = 86400

// unservedServiceType is the detail of the refusal of another type.
const unservedServiceType = "skiff serves ClusterIP and headless Services only"

// Kube's sets of valid values, sorted as its messages list them.
var (
	serviceTypes = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName,
		corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}
	sessionAffinities       = []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}
	portProtocols           = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}
	ipFamilies              = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	ipFamilyPolicies        = []corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}
	internalTrafficPolicies = []corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}
	externalTrafficPolicies = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}
	trafficDistributions    = []string{corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode}
)

// ValidateServiceCreate validates a new, defaulted Service as
// kube-apiserver does (its metadata is validated by the generic path).
// NOTE: kube-apiserver checks the IP family fields against the cluster
// first, while allocating, and answers those errors alone.
func ValidateServiceCreate(svc *corev1.Service) field.ErrorList {
	if errs := validateServiceFamilies(svc, nil); len(errs) > 0 {
		return errs
	}
	return append(validateService(svc, nil), validateServedType(svc)...)
}

// ValidateServiceUpdate validates an update of a Service.
func ValidateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	if errs := validateServiceFamilies(svc, old); len(errs) > 0 {
		return errs
	}
	errs := validateClusterIPsUpdate(svc, old)
	errs = append(errs, validateIPFamiliesUpdate(svc, old)...)
	errs = append(errs, validateService(svc, old)...)
	return append(errs, validateServedType(svc)...)
}

// validateServedType refuses the Service types skiff does not serve.
func validateServedType(svc *corev1.Service) field.ErrorList {
	if !slices.Contains(serviceTypes, svc.Spec.Type) || slices.Contains(servedServiceTypes, svc.Spec.Type) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "type"), string(svc.Spec.Type), unservedServiceType)}
}

// validateService is kube's validateService: the spec on its own.
func validateService(svc, old *corev1.Service) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	if len(spec.Ports) == 0 && !isHeadless(svc) && spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	errs = append(errs, validateTypeSpecific(svc, specPath)...)
	names := map[string]bool{}
	for i := range spec.Ports {
		errs = append(errs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, names, specPath.Child("ports").Index(i))...)
	}
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	errs = append(errs, supported(specPath.Child("sessionAffinity"), string(spec.SessionAffinity), sessionAffinities...)...)
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityClientIP:
		errs = append(errs, validateClientIPAffinity(spec.SessionAffinityConfig, specPath.Child("sessionAffinityConfig"))...)
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"), "must not be set when session affinity is None"))
		}
	}
	errs = append(errs, validateClusterIPFields(svc, old)...)
	var oldExternal []string
	if old != nil {
		oldExternal = old.Spec.ExternalIPs
	}
	for i, ip := range spec.ExternalIPs {
		p := specPath.Child("externalIPs").Index(i)
		if ipErrs := validation.IsValidIPForLegacyField(p, ip, false, oldExternal); len(ipErrs) > 0 {
			errs = append(errs, ipErrs...)
		} else {
			errs = append(errs, validateEndpointIP(ip, p)...)
		}
	}
	errs = append(errs, supported(specPath.Child("type"), string(spec.Type), serviceTypes...)...)
	errs = append(errs, validateServicePortPairs(spec, specPath.Child("ports"))...)
	errs = append(errs, validateLoadBalancerFields(svc, specPath)...)
	errs = append(errs, validateTrafficPolicies(svc, specPath)...)
	return errs
}

// validateTypeSpecific checks what depends on the type: no headless
// NodePort or LoadBalancer, an ExternalName without cluster IPs.
func validateTypeSpecific(svc *corev1.Service, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if isHeadless(svc) {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), spec.ClusterIPs[0],
				fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(cname) {
				errs = append(errs, field.Invalid(specPath.Child("externalName"), cname, msg))
			}
		} else {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		}
	}
	return errs
}

// validateServicePort is kube's validateServicePort; names collects the
// port names (required when there are several).
func validateServicePort(sp *corev1.ServicePort, requireName bool, names map[string]bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case requireName && sp.Name == "":
		errs = append(errs, field.Required(fld.Child("name"), ""))
	case sp.Name != "":
		for _, msg := range validation.IsDNS1123Label(sp.Name) {
			errs = append(errs, field.Invalid(fld.Child("name"), sp.Name, msg))
		}
		if names[sp.Name] {
			errs = append(errs, field.Duplicate(fld.Child("name"), sp.Name))
		}
		names[sp.Name] = true
	}
	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		errs = append(errs, field.Invalid(fld.Child("port"), sp.Port, msg))
	}
	errs = append(errs, supported(fld.Child("protocol"), string(sp.Protocol), portProtocols...)...)
	errs = append(errs, validatePortNumOrName(sp.TargetPort, fld.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*sp.AppProtocol) {
			errs = append(errs, field.Invalid(fld.Child("appProtocol"), *sp.AppProtocol, msg))
		}
	}
	return errs
}

// validatePortNumOrName is kube's ValidatePortNumOrName.
func validatePortNumOrName(port intstr.IntOrString, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fld, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fld, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(fld, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

// internalServicePort has the field names of kube's internal ServicePort,
// which its duplicate-port message prints as JSON.
type internalServicePort struct {
	Name        string
	Protocol    corev1.Protocol
	AppProtocol *string
	Port        int32
	TargetPort  intstr.IntOrString
	NodePort    int32
}

// validateServicePortPairs refuses a nodePort on a ClusterIP Service and
// two ports (or node ports) with the same number and protocol.
func validateServicePortPairs(spec *corev1.ServiceSpec, portsPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Type == corev1.ServiceTypeClusterIP {
		for i := range spec.Ports {
			if spec.Ports[i].NodePort != 0 {
				errs = append(errs, field.Forbidden(portsPath.Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	nodePorts := map[internalServicePort]bool{}
	for i, p := range spec.Ports {
		if p.NodePort == 0 {
			continue
		}
		key := internalServicePort{Protocol: p.Protocol, NodePort: p.NodePort}
		if nodePorts[key] {
			errs = append(errs, field.Duplicate(portsPath.Index(i).Child("nodePort"), p.NodePort))
		}
		nodePorts[key] = true
	}
	ports := map[internalServicePort]bool{}
	for i, p := range spec.Ports {
		key := internalServicePort{Protocol: p.Protocol, Port: p.Port}
		if ports[key] {
			errs = append(errs, field.Duplicate(portsPath.Index(i), key))
		}
		ports[key] = true
	}
	return errs
}

// validateLoadBalancerFields refuses the LoadBalancer-only fields on the
// other types.
func validateLoadBalancerFields(svc *corev1.Service, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	lb := spec.Type == corev1.ServiceTypeLoadBalancer
	if len(spec.LoadBalancerSourceRanges) > 0 && !lb {
		errs = append(errs, field.Forbidden(specPath.Child("LoadBalancerSourceRanges"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if _, ok := svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey]; ok && len(spec.LoadBalancerSourceRanges) == 0 && !lb {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(corev1.AnnotationLoadBalancerSourceRangesKey),
			"may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.AllocateLoadBalancerNodePorts != nil && !lb {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.LoadBalancerClass != nil && !lb {
		errs = append(errs, field.Forbidden(specPath.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
	}
	return errs
}

// validateTrafficPolicies checks externalTrafficPolicy (only for what is
// reachable from outside), healthCheckNodePort, internalTrafficPolicy and
// trafficDistribution.
func validateTrafficPolicies(svc *corev1.Service, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	spec := &svc.Spec
	switch {
	case !isExternallyAccessible(svc) && spec.ExternalTrafficPolicy != "":
		errs = append(errs, field.Invalid(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy,
			"may only be set for externally-accessible services"))
	case isExternallyAccessible(svc):
		errs = append(errs, supported(specPath.Child("externalTrafficPolicy"), string(spec.ExternalTrafficPolicy), externalTrafficPolicies...)...)
	}
	needsHealthCheck := spec.Type == corev1.ServiceTypeLoadBalancer && spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	if !needsHealthCheck && spec.HealthCheckNodePort != 0 {
		errs = append(errs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort,
			"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
	}
	switch p := spec.InternalTrafficPolicy; {
	case p == nil && spec.Type != corev1.ServiceTypeExternalName:
		errs = append(errs, field.Required(specPath.Child("internalTrafficPolicy"), ""))
	case p != nil && !slices.Contains(internalTrafficPolicies, *p):
		errs = append(errs, field.NotSupported(specPath.Child("internalTrafficPolicy"), *p,
			[]string{string(corev1.ServiceInternalTrafficPolicyCluster), string(corev1.ServiceInternalTrafficPolicyLocal)}))
	}
	if d := spec.TrafficDistribution; d != nil && !slices.Contains(trafficDistributions, *d) {
		errs = append(errs, field.NotSupported(specPath.Child("trafficDistribution"), *d, trafficDistributions))
	}
	return errs
}

// validateClientIPAffinity is kube's validateClientIPAffinityConfig.
func validateClientIPAffinity(c *corev1.SessionAffinityConfig, fld *field.Path) field.ErrorList {
	const when = "when session affinity type is ClientIP"
	switch {
	case c == nil:
		return field.ErrorList{field.Required(fld, when)}
	case c.ClientIP == nil:
		return field.ErrorList{field.Required(fld.Child("clientIP"), when)}
	case c.ClientIP.TimeoutSeconds == nil:
		return field.ErrorList{field.Required(fld.Child("clientIP", "timeoutSeconds"), when)}
	}
	if t := c.ClientIP.TimeoutSeconds; *t <= 0 || *t > maxClientIPAffinitySeconds {
		return field.ErrorList{field.Invalid(fld.Child("clientIP", "timeoutSeconds"), t,
			fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinitySeconds))}
	}
	return nil
}

// validateEndpointIP is kube's ValidateEndpointIP: an IP that can be a
// destination (not unspecified, loopback or link-local).
func validateEndpointIP(s string, fld *field.Path) field.ErrorList {
	ip, err := netip.ParseAddr(s)
	if err != nil {
		return field.ErrorList{field.Invalid(fld, s, "must be a valid IP address")}
	}
	ip = ip.Unmap()
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(fld, s, fmt.Sprintf("may not be unspecified (%v)", s)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(fld, s, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(fld, s, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(fld, s, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}
