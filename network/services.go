package network

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
)

// What the cluster DNS and the service CIDR need of the pod network.

// GatewayIP is the pod network's gateway: the first address of subnet,
// which the CNI bridge plugin gives the bridge (host-local's default
// gateway). The cluster DNS listens there.
func GatewayIP(subnet string) (string, error) {
	_, n, err := net.ParseCIDR(subnet)
	if err != nil || n.IP.To4() == nil {
		return "", fmt.Errorf("network: subnet %q is not an IPv4 CIDR", subnet)
	}
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, binary.BigEndian.Uint32(n.IP.To4())+1)
	return ip.String(), nil
}

// Upstreams returns the resolvers of the host's resolver configuration at
// path (the kubelet's --resolv-conf; "" = DefaultResolvConf), read afresh
// at each call: where names outside the cluster domain go. For the default
// file naming only systemd-resolved's stub, its upstream list is used.
func Upstreams(path string) func() ([]string, error) {
	if path == "" {
		path = DefaultResolvConf
	}
	upstream := ""
	if path == DefaultResolvConf {
		upstream = systemdResolvConf
	}
	return func() ([]string, error) {
		rc, err := hostResolvConf(path, upstream)
		return rc.Nameservers, err
	}
}

// HostRouteOverlap finds a route of the host (other than the default
// route and routes through bridge) whose destination overlaps cidr, such
// as a LAN the service CIDR would hide.
func HostRouteOverlap(cidr *net.IPNet, bridge string) (string, bool, error) {
	routes, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return "", false, fmt.Errorf("reading host routes: %w", err)
	}
	r, ok := clashingRoute(string(routes), cidr, bridge)
	return r, ok, nil
}
