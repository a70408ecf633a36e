package serviceproxy

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// UDP has no end a flow could be seen at: the kernel keeps a UDP flow's
// conntrack entry, and with it the endpoint its first packet was DNATed
// to, for as long as its client keeps sending. A client that reuses its
// socket (a DNS resolver, a metrics emitter) would go on sending to an
// endpoint that went, even to whatever pod gets its IP next; and a flow
// that began while its Service had no endpoint was never DNATed, and keeps
// bypassing the DNAT once it has one. So after each sync, as kube-proxy
// does, the entries of such UDP flows are deleted: the next packet is NEW
// again and the new rules pick an endpoint.

// ErrConntrack marks a Sync whose rules were written but whose conntrack
// cleanup failed (the kernel's conntrack netlink missing, say): worth a
// warning, not a retry of the rules.
var ErrConntrack = errors.New("service proxy: conntrack")

// staleUDP matches the conntrack entries of UDP flows to this pod
// network's Service ports that no serving endpoint answers (kube-proxy's
// CleanStaleEntries): DNATed to one of its pods that no longer serves that
// port, or never DNATed while the port has endpoints. A flow DNATed outside the pod network is left alone:
// another skiffd's Services may share the addresses. (Deleting a flow
// that was never DNATed harms nobody: its next packet meets the rules
// afresh.)
type staleUDP struct {
	podNet *net.IPNet
	// portals are the UDP Service ports (cluster or external IP and
	// port), with the "ip:port" of their endpoints.
	portals map[string]map[string]bool
}

func newStaleUDP(podCIDR string, services []Service) (*staleUDP, error) {
	_, podNet, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return nil, fmt.Errorf("service proxy: pod network %q: %w", podCIDR, err)
	}
	f := &staleUDP{podNet: podNet, portals: map[string]map[string]bool{}}
	for _, svc := range services {
		for _, p := range svc.Ports {
			if p.Protocol != "udp" {
				continue
			}
			eps := map[string]bool{}
			for _, ep := range slices.Concat(p.Endpoints, p.Draining) {
				eps[hostPort(ep.IP, ep.Port)] = true
			}
			for _, ip := range append([]string{svc.ClusterIP}, svc.ExternalIPs...) {
				f.portals[hostPort(ip, p.Port)] = eps
			}
		}
	}
	return f, nil
}

func hostPort(ip string, port int32) string {
	return net.JoinHostPort(ip, strconv.Itoa(int(port)))
}

// MatchConntrackFlow is netlink.CustomConntrackFilter's.
func (f *staleUDP) MatchConntrackFlow(flow *netlink.ConntrackFlow) bool {
	if flow.Forward.Protocol != unix.IPPROTO_UDP {
		return false
	}
	eps, ok := f.portals[hostPort(flow.Forward.DstIP.String(), int32(flow.Forward.DstPort))]
	if !ok {
		return false
	}
	target := hostPort(flow.Reverse.SrcIP.String(), int32(flow.Reverse.SrcPort))
	switch {
	case f.podNet.Contains(flow.Reverse.SrcIP): // DNATed to one of our pods
		return !eps[target]
	case flow.Reverse.SrcIP.Equal(flow.Forward.DstIP): // never DNATed
		return len(eps) > 0
	}
	return false
}

// forgetStaleUDP deletes the conntrack entries staleUDP matches, if any
// Service port is UDP.
func forgetStaleUDP(podCIDR string, services []Service) error {
	f, err := newStaleUDP(podCIDR, services)
	if err != nil || len(f.portals) == 0 {
		return err
	}
	if _, err := netlink.ConntrackDeleteFilter(netlink.ConntrackTable, unix.AF_INET, f); err != nil {
		return fmt.Errorf("%w: deleting stale UDP entries: %w", ErrConntrack, err)
	}
	return nil
}
