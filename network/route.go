package network

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// clashingRoute finds a route in the kernel's IPv4 routing table (the
// text of /proc/net/route) whose destination overlaps subnet, other than
// the default route and the routes through skiff's own bridge.
func clashingRoute(table string, subnet *net.IPNet, bridge string) (string, bool) {
	for i, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 8 || f[0] == bridge {
			continue
		}
		dst, err1 := routeIP(f[1])
		mask, err2 := routeIP(f[7])
		if err1 != nil || err2 != nil {
			continue
		}
		route := &net.IPNet{IP: dst, Mask: net.IPMask(mask)}
		if ones, _ := route.Mask.Size(); ones == 0 {
			continue // the default route
		}
		if route.Contains(subnet.IP) || subnet.Contains(route.IP) {
			return fmt.Sprintf("%s dev %s", route, f[0]), true
		}
	}
	return "", false
}

// routeIP decodes an address of /proc/net/route: the kernel prints the
// address's 4 bytes as one 32-bit number in the host's byte order.
func routeIP(s string) (net.IP, error) {
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil || len(s) != 8 {
		return nil, fmt.Errorf("bad route address %q", s)
	}
	ip := make(net.IP, 4)
	binary.NativeEndian.PutUint32(ip, uint32(v))
	return ip, nil
}
