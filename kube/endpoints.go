package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultEndpoints is kube's SetDefaults_EndpointPort: TCP ports.
func DefaultEndpoints(ep *corev1.Endpoints) {
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if p := &ep.Subsets[i].Ports[j]; p.Protocol == "" {
				p.Protocol = corev1.ProtocolTCP
			}
		}
	}
}

// ValidateEndpoints is kube's ValidateEndpoints (the metadata aside): each
// subset has addresses, valid IPs and ports. Subsets an update leaves as
// they were are not judged again.
func ValidateEndpoints(ep, old *corev1.Endpoints) field.ErrorList {
	if old != nil && equality.Semantic.DeepEqual(ep.Subsets, old.Subsets) {
		return nil
	}
	var errs field.ErrorList
	for i := range ep.Subsets {
		ss := &ep.Subsets[i]
		p := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], p.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], p.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, p.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fld *field.Path) field.ErrorList {
	errs := validation.IsValidIPForLegacyField(fld.Child("ip"), a.IP, false, nil)
	if a.Hostname != "" {
		for _, msg := range validation.IsDNS1123Label(a.Hostname) {
			errs = append(errs, field.Invalid(fld.Child("hostname"), a.Hostname, msg))
		}
	}
	if a.NodeName != nil {
		for _, msg := range validation.IsDNS1123Subdomain(*a.NodeName) {
			errs = append(errs, field.Invalid(fld.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return append(errs, validateEndpointIP(a.IP, fld.Child("ip"))...)
}

func validateEndpointPort(p *corev1.EndpointPort, requireName bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case requireName && p.Name == "":
		errs = append(errs, field.Required(fld.Child("name"), ""))
	case p.Name != "":
		for _, msg := range validation.IsDNS1123Label(p.Name) {
			errs = append(errs, field.Invalid(fld.Child("name"), p.Name, msg))
		}
	}
	for _, msg := range validation.IsValidPortNum(int(p.Port)) {
		errs = append(errs, field.Invalid(fld.Child("port"), p.Port, msg))
	}
	errs = append(errs, supported(fld.Child("protocol"), string(p.Protocol), portProtocols...)...)
	if p.AppProtocol != nil {
		for _, msg := range validation.IsQualifiedName(*p.AppProtocol) {
			errs = append(errs, field.Invalid(fld.Child("appProtocol"), *p.AppProtocol, msg))
		}
	}
	return errs
}
