package kube

import (
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kube's limits on an EndpointSlice.
const (
	maxSliceEndpoints = 1000
	maxSliceAddresses = 100
	maxSlicePorts     = 20000
	maxSliceTopology  = 16
)

// DefaultEndpointSlice is kube's SetDefaults_EndpointPort: each port has
// a name ("") and a protocol (TCP).
func DefaultEndpointSlice(s *discoveryv1.EndpointSlice) {
	for i := range s.Ports {
		p := &s.Ports[i]
		if p.Name == nil {
			p.Name = ptr.To("")
		}
		if p.Protocol == nil {
			p.Protocol = ptr.To(corev1.ProtocolTCP)
		}
	}
}

var addressTypes = []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}

// ValidateEndpointSlice is kube's ValidateEndpointSlice (the metadata
// aside): an address type, valid ports, and endpoints whose addresses are
// of that type. Endpoints an update leaves as they were are not judged
// again; the address type never changes.
func ValidateEndpointSlice(s, old *discoveryv1.EndpointSlice) field.ErrorList {
	errs := supported(field.NewPath("addressType"), string(s.AddressType), addressTypes...)
	errs = append(errs, validateSlicePorts(s.Ports, field.NewPath("ports"))...)
	if old == nil || !equality.Semantic.DeepEqual(s.Endpoints, old.Endpoints) {
		errs = append(errs, validateSliceEndpoints(s.Endpoints, s.AddressType, field.NewPath("endpoints"))...)
	}
	if old != nil {
		errs = append(errs, validateImmutable(s.AddressType, old.AddressType, field.NewPath("addressType"))...)
	}
	return errs
}

func validateSliceEndpoints(eps []discoveryv1.Endpoint, addrType discoveryv1.AddressType, fld *field.Path) field.ErrorList {
	if len(eps) > maxSliceEndpoints {
		return field.ErrorList{field.TooMany(fld, len(eps), maxSliceEndpoints)}
	}
	var errs field.ErrorList
	for i, ep := range eps {
		p := fld.Index(i)
		addrPath := p.Child("addresses")
		switch {
		case len(ep.Addresses) == 0:
			errs = append(errs, field.Required(addrPath, "must contain at least 1 address"))
		case len(ep.Addresses) > maxSliceAddresses:
			errs = append(errs, field.TooMany(addrPath, len(ep.Addresses), maxSliceAddresses))
		}
		for j, a := range ep.Addresses {
			errs = append(errs, validateSliceAddress(a, addrType, addrPath, j)...)
		}
		if ep.NodeName != nil {
			for _, msg := range validation.IsDNS1123Subdomain(*ep.NodeName) {
				errs = append(errs, field.Invalid(p.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		topo := p.Child("deprecatedTopology")
		if len(ep.DeprecatedTopology) > maxSliceTopology {
			errs = append(errs, field.TooMany(topo, len(ep.DeprecatedTopology), maxSliceTopology))
		}
		errs = append(errs, metav1validation.ValidateLabels(ep.DeprecatedTopology, topo)...)
		if ep.Hostname != nil {
			for _, msg := range validation.IsDNS1123Label(*ep.Hostname) {
				errs = append(errs, field.Invalid(p.Child("hostname"), *ep.Hostname, msg))
			}
		}
	}
	return errs
}

// validateSliceAddress checks the address i of an endpoint against the
// slice's address type.
func validateSliceAddress(a string, addrType discoveryv1.AddressType, addrPath *field.Path, i int) field.ErrorList {
	switch addrType {
	case discoveryv1.AddressTypeIPv4:
		if errs := validation.IsValidIPForLegacyField(addrPath.Index(i), a, false, nil); len(errs) > 0 {
			return errs
		}
		var errs field.ErrorList
		if familyOf(a) != corev1.IPv4Protocol {
			errs = append(errs, field.Invalid(addrPath, a, "must be an IPv4 address"))
		}
		return append(errs, validateEndpointIP(a, addrPath.Index(i))...)
	case discoveryv1.AddressTypeIPv6:
		if errs := validation.IsValidIP(addrPath.Index(i), a); len(errs) > 0 {
			return errs
		}
		var errs field.ErrorList
		if familyOf(a) != corev1.IPv6Protocol {
			errs = append(errs, field.Invalid(addrPath, a, "must be an IPv6 address"))
		}
		return append(errs, validateEndpointIP(a, addrPath.Index(i))...)
	case discoveryv1.AddressTypeFQDN:
		return validation.IsFullyQualifiedDomainName(addrPath.Index(i), a)
	}
	return nil
}

func validateSlicePorts(ports []discoveryv1.EndpointPort, fld *field.Path) field.ErrorList {
	if len(ports) > maxSlicePorts {
		return field.ErrorList{field.TooMany(fld, len(ports), maxSlicePorts)}
	}
	var errs field.ErrorList
	var names []string
	for i, port := range ports {
		p := fld.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		if name != "" {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(p.Child("name"), name, msg))
			}
		}
		if slices.Contains(names, name) {
			errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
		} else {
			names = append(names, name)
		}
		if port.Protocol == nil {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else if !slices.Contains(portProtocols, *port.Protocol) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), *port.Protocol, []string{"SCTP", "TCP", "UDP"}))
		}
		if port.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*port.AppProtocol) {
				errs = append(errs, field.Invalid(p.Child("appProtocol"), *port.AppProtocol, msg))
			}
		}
	}
	return errs
}
