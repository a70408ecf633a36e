// Package serviceproxy makes ClusterIP Services work on the node the way
// kube-proxy's iptables mode does: a DNAT from each Service port's
// virtual IP to one of its ready endpoints, picked at random (or by the
// client's address with ClientIP session affinity), masquerading what
// needs it (traffic from outside the pod network, and a pod reaching
// itself through its Service), and rejecting at once connections to a
// Service port without endpoints. Rules are written with
// iptables-restore in one batch per sync, into chains of their own named
// after the pod bridge, so that several skiffds can share a host. The
// rules outlive skiffd (running pods keep reaching their Services while it
// restarts); each sync rewrites them whole and deletes the chains left
// from before. It imports no skiff package.
//
// NOTE: what kube-proxy's iptables mode does that this does not: node
// ports, load balancers and their health checks (skiff refuses those
// Service types); traffic policies Local and topology (on one node every
// endpoint is local, so they change nothing); IPv6; partial syncs (every sync rewrites all Services, cheap at
// the sizes one node runs).
package serviceproxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"slices"
	"strings"
)

// Service is what the proxy needs of a Service: one ClusterIP, its ports.
type Service struct {
	Namespace, Name string
	ClusterIP       string
	ExternalIPs     []string
	Ports           []Port
	// AffinitySeconds > 0 keeps a client on the endpoint it first got for
	// that long (sessionAffinity ClientIP).
	AffinitySeconds int32
}

// Port is one Service port and the endpoints that serve it.
type Port struct {
	Name      string
	Protocol  string // "tcp", "udp" or "sctp"
	Port      int32
	Endpoints []Endpoint
	// Draining are serving endpoints that are terminating, which get no
	// new flow while Endpoints has others: the UDP flows they already
	// have are kept, as kube-proxy keeps every serving endpoint's.
	Draining []Endpoint
}

// Endpoint is a pod's address for a Service port.
type Endpoint struct {
	IP   string
	Port int32
}

// masqMark is the packet mark that asks for masquerading (kube-proxy's).
const masqMark = "0x4000/0x4000"

// chains names the chains of one pod network.
type chains struct {
	prefix string // "SK" + 6 hex digits of the bridge name's hash
}

func chainsFor(bridge string) chains {
	sum := sha256.Sum256([]byte(bridge))
	return chains{prefix: fmt.Sprintf("SK%x", sum[:3])}
}

func (c chains) services() string    { return c.prefix + "-SERVICES" }
func (c chains) postrouting() string { return c.prefix + "-POSTROUTING" }
func (c chains) markMasq() string    { return c.prefix + "-MARK-MASQ" }

// svc and sep are the chains of a Service port and of one of its
// endpoints, named by a hash as kube-proxy's (at most 25 characters: the
// kernel allows 28).
func (c chains) svc(portName, proto string) string {
	return c.prefix + "-SVC-" + hashName(portName+proto)
}

func (c chains) sep(portName, proto string, ep Endpoint) string {
	return c.prefix + "-SEP-" + hashName(fmt.Sprintf("%s%s%s:%d", portName, proto, ep.IP, ep.Port))
}

func (c chains) owns(chain string) bool { return strings.HasPrefix(chain, c.prefix+"-") }

func hashName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:12]
}

// portName is "ns/name:port" as kube-proxy's comments show it.
func portName(svc Service, p Port) string {
	if p.Name == "" {
		return svc.Namespace + "/" + svc.Name
	}
	return svc.Namespace + "/" + svc.Name + ":" + p.Name
}

// ruleSet is the content of the proxy's chains.
type ruleSet struct {
	natChains, filterChains []string
	nat, filter             bytes.Buffer
}

// rules renders the iptables-restore input for services: the nat and
// filter tables' chains of this pod network, and the deletion of stale
// (chains of the network that exist but are no longer needed).
// podCIDR is the pod network; masqueradeAll masquerades every Service
// connection (when bridged traffic bypasses iptables).
func rules(c chains, podCIDR string, masqueradeAll bool, services []Service, stale []string) []byte {
	var rs ruleSet
	rs.natChains = []string{c.services(), c.postrouting(), c.markMasq()}
	rs.filterChains = []string{c.services()}
	fmt.Fprintf(&rs.nat, "-A %s -m mark ! --mark %s -j RETURN\n", c.postrouting(), masqMark)
	fmt.Fprintf(&rs.nat, "-A %s -j MARK --xor-mark 0x4000\n", c.postrouting())
	fmt.Fprintf(&rs.nat, "-A %s -m comment --comment \"skiff service traffic requiring SNAT\" -j MASQUERADE\n", c.postrouting())
	fmt.Fprintf(&rs.nat, "-A %s -j MARK --or-mark 0x4000\n", c.markMasq())
	for _, svc := range services {
		for _, p := range svc.Ports {
			rs.servicePort(c, podCIDR, masqueradeAll, svc, p)
		}
	}
	var out bytes.Buffer
	out.WriteString("*nat\n")
	for _, ch := range rs.natChains {
		fmt.Fprintf(&out, ":%s - [0:0]\n", ch)
	}
	for _, ch := range stale {
		if !slices.Contains(rs.natChains, ch) {
			fmt.Fprintf(&out, ":%s - [0:0]\n", ch)
		}
	}
	out.Write(rs.nat.Bytes())
	for _, ch := range stale {
		if !slices.Contains(rs.natChains, ch) {
			fmt.Fprintf(&out, "-X %s\n", ch)
		}
	}
	out.WriteString("COMMIT\n*filter\n")
	for _, ch := range rs.filterChains {
		fmt.Fprintf(&out, ":%s - [0:0]\n", ch)
	}
	out.Write(rs.filter.Bytes())
	out.WriteString("COMMIT\n")
	return out.Bytes()
}

// servicePort writes the rules of one Service port.
func (rs *ruleSet) servicePort(c chains, podCIDR string, masqueradeAll bool, svc Service, p Port) {
	name := portName(svc, p)
	match := fmt.Sprintf("-m %s -p %s", p.Protocol, p.Protocol)
	dests := append([]string{svc.ClusterIP}, svc.ExternalIPs...)
	if len(p.Endpoints) == 0 {
		for _, ip := range dests {
			fmt.Fprintf(&rs.filter, "-A %s -m comment --comment %q %s -d %s/32 --dport %d -j REJECT --reject-with icmp-port-unreachable\n",
				c.services(), name+" has no endpoints", match, ip, p.Port)
		}
		return
	}
	svcChain := c.svc(name, p.Protocol)
	rs.natChains = append(rs.natChains, svcChain)
	fmt.Fprintf(&rs.nat, "-A %s -m comment --comment %q %s -d %s/32 --dport %d -j %s\n",
		c.services(), name+" cluster IP", match, svc.ClusterIP, p.Port, svcChain)
	for _, ip := range svc.ExternalIPs {
		// NOTE: traffic to an external IP is always masqueraded, as
		// kube-proxy does for externally-reached Services with policy Cluster.
		fmt.Fprintf(&rs.nat, "-A %s -m comment --comment %q %s -d %s/32 --dport %d -j %s\n",
			c.services(), name+" external IP", match, ip, p.Port, c.markMasq())
		fmt.Fprintf(&rs.nat, "-A %s -m comment --comment %q %s -d %s/32 --dport %d -j %s\n",
			c.services(), name+" external IP", match, ip, p.Port, svcChain)
	}
	if masqueradeAll {
		fmt.Fprintf(&rs.nat, "-A %s -m comment --comment %q %s -d %s/32 --dport %d -j %s\n",
			svcChain, name+" cluster IP", match, svc.ClusterIP, p.Port, c.markMasq())
	} else {
		fmt.Fprintf(&rs.nat, "-A %s -m comment --comment %q %s -d %s/32 --dport %d ! -s %s -j %s\n",
			svcChain, name+" cluster IP", match, svc.ClusterIP, p.Port, podCIDR, c.markMasq())
	}
	n := len(p.Endpoints)
	if svc.AffinitySeconds > 0 {
		for _, ep := range p.Endpoints {
			sep := c.sep(name, p.Protocol, ep)
			fmt.Fprintf(&rs.nat, "-A %s -m comment --comment %q -m recent --name %s --mask 255.255.255.255 --rsource --rcheck --seconds %d --reap -j %s\n",
				svcChain, fmt.Sprintf("%s -> %s:%d", name, ep.IP, ep.Port), sep, svc.AffinitySeconds, sep)
		}
	}
	for i, ep := range p.Endpoints {
		sep := c.sep(name, p.Protocol, ep)
		comment := fmt.Sprintf("%s -> %s:%d", name, ep.IP, ep.Port)
		if i < n-1 {
			fmt.Fprintf(&rs.nat, "-A %s -m comment --comment %q -m statistic --mode random --probability %0.10f -j %s\n",
				svcChain, comment, 1.0/float64(n-i), sep)
		} else {
			fmt.Fprintf(&rs.nat, "-A %s -m comment --comment %q -j %s\n", svcChain, comment, sep)
		}
		rs.natChains = append(rs.natChains, sep)
		fmt.Fprintf(&rs.nat, "-A %s -m comment --comment %q -s %s/32 -j %s\n", sep, name, ep.IP, c.markMasq())
		affinity := ""
		if svc.AffinitySeconds > 0 {
			affinity = fmt.Sprintf(" -m recent --name %s --mask 255.255.255.255 --rsource --set", sep)
		}
		fmt.Fprintf(&rs.nat, "-A %s -m comment --comment %q%s %s -j DNAT --to-destination %s:%d\n",
			sep, name, affinity, match, ep.IP, ep.Port)
	}
}

// jumps are the rules that send the built-in chains' traffic into this
// pod network's chains: table, chain, rule.
func jumps(c chains, bridge string) [][3]string {
	portals := fmt.Sprintf("-m comment --comment \"skiff service portals (%s)\" -j %s", bridge, c.services())
	return [][3]string{
		{"nat", "PREROUTING", portals},
		{"nat", "OUTPUT", portals},
		{"nat", "POSTROUTING", fmt.Sprintf("-m comment --comment \"skiff postrouting rules (%s)\" -j %s", bridge, c.postrouting())},
		{"filter", "FORWARD", "-m conntrack --ctstate NEW " + portals},
		{"filter", "OUTPUT", "-m conntrack --ctstate NEW " + portals},
	}
}
