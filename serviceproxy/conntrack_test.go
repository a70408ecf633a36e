package serviceproxy

import (
	"net"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func TestStaleUDP(t *testing.T) {
	services := []Service{
		{Namespace: "default", Name: "dns", ClusterIP: "10.96.0.10", ExternalIPs: []string{"192.0.2.10"}, Ports: []Port{
			{Protocol: "udp", Port: 53, Endpoints: []Endpoint{{IP: "10.168.20.5", Port: 5353}}, Draining: []Endpoint{{IP: "10.168.20.6", Port: 5353}}},
			{Protocol: "tcp", Port: 53, Endpoints: []Endpoint{{IP: "10.168.20.5", Port: 5353}}},
		}},
		{Namespace: "default", Name: "idle", ClusterIP: "10.96.0.11", Ports: []Port{{Protocol: "udp", Port: 53}}},
	}
	f, err := newStaleUDP("10.168.20.0/24", services)
	if err != nil {
		t.Fatal(err)
	}
	flow := func(proto uint8, src, dst string, dport uint16, replySrc string, replySport uint16) *netlink.ConntrackFlow {
		var f netlink.ConntrackFlow // its tuples' type is unexported
		f.Forward.Protocol, f.Forward.SrcIP, f.Forward.DstIP, f.Forward.SrcPort, f.Forward.DstPort = proto, net.ParseIP(src), net.ParseIP(dst), 40000, dport
		f.Reverse.Protocol, f.Reverse.SrcIP, f.Reverse.DstIP, f.Reverse.SrcPort, f.Reverse.DstPort = proto, net.ParseIP(replySrc), net.ParseIP(src), replySport, 40000
		return &f
	}
	tests := map[string]struct {
		flow *netlink.ConntrackFlow
		want bool
	}{
		"to the current endpoint":                     {flow(unix.IPPROTO_UDP, "10.168.20.7", "10.96.0.10", 53, "10.168.20.5", 5353), false},
		"from the host to the current endpoint":       {flow(unix.IPPROTO_UDP, "192.0.2.1", "10.96.0.10", 53, "10.168.20.5", 5353), false},
		"to a terminating endpoint that still serves": {flow(unix.IPPROTO_UDP, "10.168.20.7", "10.96.0.10", 53, "10.168.20.6", 5353), false},
		"to an endpoint that went":                    {flow(unix.IPPROTO_UDP, "10.168.20.7", "10.96.0.10", 53, "10.168.20.9", 5353), true},
		"to the endpoint's IP on a port it left":      {flow(unix.IPPROTO_UDP, "10.168.20.7", "10.96.0.10", 53, "10.168.20.5", 53), true},
		"by an external IP, to one that went":         {flow(unix.IPPROTO_UDP, "192.0.2.1", "192.0.2.10", 53, "10.168.20.9", 5353), true},
		"never DNATed, the port has endpoints":        {flow(unix.IPPROTO_UDP, "192.0.2.1", "10.96.0.10", 53, "10.96.0.10", 53), true},
		"never DNATed, the port has none":             {flow(unix.IPPROTO_UDP, "10.168.20.7", "10.96.0.11", 53, "10.96.0.11", 53), false},
		"DNATed outside the pod network":              {flow(unix.IPPROTO_UDP, "10.168.20.7", "10.96.0.10", 53, "10.169.0.4", 5353), false},
		"TCP is left to end":                          {flow(unix.IPPROTO_TCP, "10.168.20.7", "10.96.0.10", 53, "10.168.20.9", 5353), false},
		"another address":                             {flow(unix.IPPROTO_UDP, "10.168.20.7", "10.96.0.12", 53, "10.168.20.9", 5353), false},
		"another port of the Service's address":       {flow(unix.IPPROTO_UDP, "10.168.20.7", "10.96.0.10", 54, "10.168.20.9", 5353), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := f.MatchConntrackFlow(tc.flow); got != tc.want {
				t.Errorf("stale = %v, want %v", got, tc.want)
			}
		})
	}
}
