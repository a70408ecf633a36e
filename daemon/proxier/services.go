package proxier

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/skiff-sh/skiff/serviceproxy"
)

// proxiedService is svc as the rules serve it, with its EndpointSlices:
// only a ClusterIP Service with an IPv4 clusterIP is proxied (headless
// ones are not). Each port's endpoints are the ready endpoints that
// serve it, on the port number their slice gives the port's name.
//
// NOTE: as kube-proxy (ProxyTerminatingEndpoints): when no endpoint of a
// port is ready, the serving endpoints that are terminating take the
// traffic, so that connections drain while pods are replaced.
func proxiedService(svc *corev1.Service, epSlices []*discoveryv1.EndpointSlice) (serviceproxy.Service, bool) {
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || err != nil || !ip.Is4() {
		return serviceproxy.Service{}, false
	}
	out := serviceproxy.Service{Namespace: svc.Namespace, Name: svc.Name, ClusterIP: ip.String(), ExternalIPs: svc.Spec.ExternalIPs}
	if c := svc.Spec.SessionAffinityConfig; svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP &&
		c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		out.AffinitySeconds = *c.ClientIP.TimeoutSeconds
	}
	for _, sp := range svc.Spec.Ports {
		ready, terminating := portEndpoints(sp, epSlices)
		if len(ready) == 0 {
			ready, terminating = terminating, nil
		}
		out.Ports = append(out.Ports, serviceproxy.Port{Name: sp.Name, Protocol: strings.ToLower(string(sp.Protocol)),
			Port: sp.Port, Endpoints: ready, Draining: terminating})
	}
	return out, true
}

// portEndpoints are the ready endpoints of a Service port, and the serving
// terminating ones, each address and port once, sorted.
func portEndpoints(sp corev1.ServicePort, epSlices []*discoveryv1.EndpointSlice) (ready, terminating []serviceproxy.Endpoint) {
	seen := map[serviceproxy.Endpoint]bool{}
	for _, s := range epSlices {
		for _, p := range s.Ports {
			if p.Port == nil || deref(p.Name) != sp.Name || cmp.Or(deref(p.Protocol), corev1.ProtocolTCP) != sp.Protocol {
				continue
			}
			for _, ep := range s.Endpoints {
				c := ep.Conditions
				isReady := c.Ready == nil || *c.Ready
				isDraining := !isReady && (c.Serving == nil || *c.Serving) && c.Terminating != nil && *c.Terminating
				for _, a := range ep.Addresses {
					e := serviceproxy.Endpoint{IP: a, Port: *p.Port}
					switch {
					case seen[e]:
					case isReady:
						ready = append(ready, e)
					case isDraining:
						terminating = append(terminating, e)
					}
					seen[e] = true
				}
			}
		}
	}
	byAddr := func(a, b serviceproxy.Endpoint) int {
		return cmp.Or(strings.Compare(a.IP, b.IP), cmp.Compare(a.Port, b.Port))
	}
	slices.SortFunc(ready, byAddr)
	slices.SortFunc(terminating, byAddr)
	return ready, terminating
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
