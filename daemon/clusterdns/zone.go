package clusterdns

import (
	"math"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// ttl is the TTL of every answer (CoreDNS' kubernetes plugin's default).
const ttl = 5

// Zone holds the records of the cluster domain, after Kubernetes' DNS
// specification for Services and Pods (as CoreDNS' kubernetes plugin
// answers it, with "pods insecure"):
//
//	<svc>.<ns>.svc.<domain>               A: the clusterIP; headless: the ready endpoints' IPs
//	<ep>.<svc>.<ns>.svc.<domain>          A: a ready endpoint of a headless Service, <ep> being
//	                                      its hostname or its dashed IP (10-88-0-5)
//	_<port>._<proto>.<svc>.<ns>.svc.<domain>  SRV: per named port, the Service (or, headless,
//	                                      each ready endpoint) with the address in the extra section
//	<a-b-c-d>.<ns>.pod.<domain>           A: a.b.c.d
//	<reversed IP>.in-addr.arpa            PTR: a clusterIP's Service, a headless endpoint's name
//
// It is safe for concurrent use.
type Zone struct {
	domain string // fully qualified, lower case

	mu       sync.RWMutex
	services map[objKey]*service
	// slices are the EndpointSlices by Service, then by slice name.
	slices map[objKey]map[string]*endpointSlice
}

type objKey struct{ namespace, name string }

// service is what DNS needs of a Service.
type service struct {
	clusterIP string // "" for headless Services
	ports     []corev1.ServicePort
}

// endpointSlice is what DNS needs of an EndpointSlice.
type endpointSlice struct {
	ports     []discoveryv1.EndpointPort
	endpoints []endpoint // the ready ones
}

type endpoint struct {
	ip       string
	hostname string
}

// name is the endpoint's first label under its Service: its hostname, or
// its dashed IP.
func (e endpoint) name() string {
	if e.hostname != "" {
		return e.hostname
	}
	return strings.ReplaceAll(e.ip, ".", "-")
}

// NewZone returns an empty zone for domain ("cluster.local").
func NewZone(domain string) *Zone {
	return &Zone{domain: dns.Fqdn(strings.ToLower(domain)), services: map[objKey]*service{},
		slices: map[objKey]map[string]*endpointSlice{}}
}

// SetService records a Service (IPv4 ClusterIP or headless).
func (z *Zone) SetService(svc *corev1.Service) {
	s := &service{ports: slices.Clone(svc.Spec.Ports)}
	if ip := svc.Spec.ClusterIP; ip != corev1.ClusterIPNone {
		s.clusterIP = ip
	}
	z.mu.Lock()
	z.services[objKey{svc.Namespace, svc.Name}] = s
	z.mu.Unlock()
}

// DeleteService forgets a Service.
func (z *Zone) DeleteService(namespace, name string) {
	z.mu.Lock()
	delete(z.services, objKey{namespace, name})
	z.mu.Unlock()
}

// SetSlice records an EndpointSlice (of the Service its
// kubernetes.io/service-name label names); only its ready IPv4 endpoints count.
func (z *Zone) SetSlice(s *discoveryv1.EndpointSlice) {
	svc, ok := s.Labels[discoveryv1.LabelServiceName]
	if !ok || s.AddressType != discoveryv1.AddressTypeIPv4 {
		z.DeleteSlice(s.Namespace, s.Name)
		return
	}
	es := &endpointSlice{ports: slices.Clone(s.Ports)}
	for _, ep := range s.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		hostname := ""
		if ep.Hostname != nil {
			hostname = strings.ToLower(*ep.Hostname)
		}
		for _, a := range ep.Addresses {
			es.endpoints = append(es.endpoints, endpoint{ip: a, hostname: hostname})
		}
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	z.deleteSliceLocked(s.Namespace, s.Name)
	k := objKey{s.Namespace, svc}
	if z.slices[k] == nil {
		z.slices[k] = map[string]*endpointSlice{}
	}
	z.slices[k][s.Name] = es
}

// DeleteSlice forgets an EndpointSlice.
func (z *Zone) DeleteSlice(namespace, name string) {
	z.mu.Lock()
	z.deleteSliceLocked(namespace, name)
	z.mu.Unlock()
}

func (z *Zone) deleteSliceLocked(namespace, name string) {
	for k, byName := range z.slices {
		if k.namespace != namespace {
			continue
		}
		if _, ok := byName[name]; ok {
			delete(byName, name)
			if len(byName) == 0 {
				delete(z.slices, k)
			}
			return
		}
	}
}

// ReplaceServices replaces every Service with those given.
func (z *Zone) ReplaceServices(svcs []*corev1.Service) {
	z.mu.Lock()
	z.services = map[objKey]*service{}
	z.mu.Unlock()
	for _, svc := range svcs {
		z.SetService(svc)
	}
}

// ReplaceSlices replaces every EndpointSlice with those given.
func (z *Zone) ReplaceSlices(list []*discoveryv1.EndpointSlice) {
	z.mu.Lock()
	z.slices = map[objKey]map[string]*endpointSlice{}
	z.mu.Unlock()
	for _, s := range list {
		z.SetSlice(s)
	}
}

// Lookup answers name for qtype (dnsserver.Zone).
func (z *Zone) Lookup(name string, qtype uint16) (answer, extra []dns.RR, exists bool) {
	z.mu.RLock()
	defer z.mu.RUnlock()
	if strings.HasSuffix(name, ".in-addr.arpa.") {
		return z.lookupReverse(name, qtype)
	}
	if name == z.domain {
		return nil, nil, true
	}
	rel, ok := strings.CutSuffix(name, "."+z.domain)
	if !ok {
		return nil, nil, false
	}
	labels := strings.Split(rel, ".")
	n := len(labels)
	switch labels[n-1] {
	case "svc":
		return z.lookupService(name, labels[:n-1], qtype)
	case "pod":
		return z.lookupPod(name, labels[:n-1], qtype)
	}
	return nil, nil, false
}

// lookupService answers names under svc.<domain>: labels are those before "svc".
func (z *Zone) lookupService(name string, labels []string, qtype uint16) ([]dns.RR, []dns.RR, bool) {
	switch len(labels) {
	case 0:
		return nil, nil, true
	case 1:
		return nil, nil, z.hasNamespace(labels[0])
	case 2:
		k := objKey{labels[1], labels[0]}
		svc, ok := z.services[k]
		if !ok {
			return nil, nil, false
		}
		switch qtype {
		case dns.TypeA, dns.TypeANY:
			return z.serviceA(name, k, svc), nil, true
		case dns.TypeSRV:
			ans, extra := z.serviceSRV(k, svc, "", "")
			return ans, extra, true
		}
		return nil, nil, true
	case 3:
		k := objKey{labels[2], labels[1]}
		svc, ok := z.services[k]
		if !ok || svc.clusterIP != "" {
			return nil, nil, false
		}
		found := false
		var ans []dns.RR
		for _, ep := range z.readyEndpoints(k) {
			if ep.name() != labels[0] {
				continue
			}
			found = true
			if qtype == dns.TypeA || qtype == dns.TypeANY {
				ans = append(ans, aRecord(name, ep.ip))
			}
		}
		return ans, nil, found
	case 4:
		port, okp := strings.CutPrefix(labels[0], "_")
		proto, okr := strings.CutPrefix(labels[1], "_")
		k := objKey{labels[3], labels[2]}
		svc, ok := z.services[k]
		if !okp || !okr || !ok {
			return nil, nil, false
		}
		ans, extra := z.serviceSRV(k, svc, port, proto)
		if len(ans) == 0 {
			return nil, nil, false
		}
		if qtype != dns.TypeSRV && qtype != dns.TypeANY {
			return nil, nil, true
		}
		return ans, extra, true
	}
	return nil, nil, false
}

// hasNamespace reports whether a Service lives in ns.
func (z *Zone) hasNamespace(ns string) bool {
	for k := range z.services {
		if k.namespace == ns {
			return true
		}
	}
	return false
}

// readyEndpoints are the Service's ready endpoints, each IP once, sorted.
func (z *Zone) readyEndpoints(k objKey) []endpoint {
	seen := map[string]bool{}
	var out []endpoint
	for _, s := range z.slices[k] {
		for _, ep := range s.endpoints {
			if !seen[ep.ip] {
				seen[ep.ip] = true
				out = append(out, ep)
			}
		}
	}
	slices.SortFunc(out, func(a, b endpoint) int { return strings.Compare(a.ip, b.ip) })
	return out
}

// serviceA is the Service's clusterIP, or its ready endpoints' IPs.
func (z *Zone) serviceA(name string, k objKey, svc *service) []dns.RR {
	if svc.clusterIP != "" {
		return []dns.RR{aRecord(name, svc.clusterIP)}
	}
	var out []dns.RR
	for _, ep := range z.readyEndpoints(k) {
		out = append(out, aRecord(name, ep.ip))
	}
	return out
}

// serviceSRV are the SRV records of the Service's named ports (of the one
// port and protocol given, or all), with the targets' addresses as extra.
func (z *Zone) serviceSRV(k objKey, svc *service, port, proto string) (answer, extra []dns.RR) {
	svcName := k.name + "." + k.namespace + ".svc." + z.domain
	for _, p := range svc.ports {
		if p.Name == "" || (port != "" && (strings.ToLower(p.Name) != port || strings.ToLower(string(p.Protocol)) != proto)) {
			continue
		}
		owner := "_" + strings.ToLower(p.Name) + "._" + strings.ToLower(string(p.Protocol)) + "." + svcName
		if svc.clusterIP != "" {
			answer = append(answer, srvRecord(owner, svcName, uint16(p.Port), 100))
			extra = append(extra, aRecord(svcName, svc.clusterIP))
			continue
		}
		targets := z.endpointPorts(k, p)
		for _, t := range targets {
			target := t.ep.name() + "." + svcName
			answer = append(answer, srvRecord(owner, target, t.port, srvWeight(len(targets))))
			extra = append(extra, aRecord(target, t.ep.ip))
		}
	}
	return answer, extra
}

type endpointPort struct {
	ep   endpoint
	port uint16
}

// endpointPorts are the ready endpoints serving the Service port p, with
// the port number each serves it on.
func (z *Zone) endpointPorts(k objKey, p corev1.ServicePort) []endpointPort {
	var out []endpointPort
	seen := map[string]bool{}
	for _, s := range z.slices[k] {
		for _, sp := range s.ports {
			if sp.Name == nil || *sp.Name != p.Name || sp.Port == nil || (sp.Protocol != nil && *sp.Protocol != p.Protocol) {
				continue
			}
			for _, ep := range s.endpoints {
				if !seen[ep.ip] {
					seen[ep.ip] = true
					out = append(out, endpointPort{ep, uint16(*sp.Port)})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b endpointPort) int { return strings.Compare(a.ep.ip, b.ep.ip) })
	return out
}

// srvWeight shares a weight of 100 among n records of one priority, as
// CoreDNS does.
func srvWeight(n int) uint16 {
	return uint16(max(1, math.Floor(100/float64(max(n, 1)))))
}

// lookupPod answers names under pod.<domain>: "<a-b-c-d>.<ns>".
func (z *Zone) lookupPod(name string, labels []string, qtype uint16) ([]dns.RR, []dns.RR, bool) {
	switch len(labels) {
	case 0, 1:
		return nil, nil, true
	case 2:
		ip, err := netip.ParseAddr(strings.ReplaceAll(labels[0], "-", "."))
		if err != nil || !ip.Is4() {
			return nil, nil, false
		}
		if qtype == dns.TypeA || qtype == dns.TypeANY {
			return []dns.RR{aRecord(name, ip.String())}, nil, true
		}
		return nil, nil, true
	}
	return nil, nil, false
}

// lookupReverse answers PTR names of clusterIPs and headless endpoints.
func (z *Zone) lookupReverse(name string, qtype uint16) ([]dns.RR, []dns.RR, bool) {
	labels := strings.Split(strings.TrimSuffix(name, ".in-addr.arpa."), ".")
	if len(labels) != 4 {
		return nil, nil, false
	}
	slices.Reverse(labels)
	ip := strings.Join(labels, ".")
	var targets []string
	for k, svc := range z.services {
		svcName := k.name + "." + k.namespace + ".svc." + z.domain
		if svc.clusterIP == ip {
			targets = append(targets, svcName)
		}
		if svc.clusterIP != "" {
			continue
		}
		for _, ep := range z.readyEndpoints(k) {
			if ep.ip == ip {
				targets = append(targets, ep.name()+"."+svcName)
			}
		}
	}
	if len(targets) == 0 {
		return nil, nil, false
	}
	if qtype != dns.TypePTR && qtype != dns.TypeANY {
		return nil, nil, true
	}
	slices.Sort(targets)
	var out []dns.RR
	for _, t := range targets {
		out = append(out, &dns.PTR{Hdr: header(name, dns.TypePTR), Ptr: t})
	}
	return out, nil, true
}

func header(name string, t uint16) dns.RR_Header {
	return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: ttl}
}

func aRecord(name, ip string) dns.RR {
	addr, _ := netip.ParseAddr(ip)
	return &dns.A{Hdr: header(name, dns.TypeA), A: addr.AsSlice()}
}

func srvRecord(name, target string, port, weight uint16) dns.RR {
	return &dns.SRV{Hdr: header(name, dns.TypeSRV), Priority: 0, Weight: weight, Port: port, Target: target}
}
