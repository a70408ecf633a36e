// Package nettest gives integration tests a pod network of their own: a
// subnet and a bridge that no other test process on the machine uses, even
// when the tests of several checkouts run at once, and removes from the
// host what the network left there (the bridge, its iptables rules) when
// the test ends.
//
// A subnet is held through an flock on a file under LockDir, so that a
// test process that dies frees its subnets at once; the next test to take
// one removes what the dead process left of it.
package nettest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skiff-sh/skiff/network"
)

// LockDir holds one lock file per subnet in use.
const LockDir = "/run/skiff-test-nets"

// The subnets handed out: the /24s of 10.160.0.0/12 (apart from the
// ranges the tests used before, 10.200-231.x and 10.240-255.x, as
// checkouts that still pick those may run at the same time).
const (
	firstOctet2 = 160
	subnets     = 16 * 256
)

// Net is a pod network reserved for a test.
type Net struct {
	Subnet string // a /24
	Bridge string
}

// Gateway is the bridge's address, the first of the subnet (the bridge
// plugin's isGateway).
func (n Net) Gateway() string {
	ip, _, _ := net.ParseCIDR(n.Subnet)
	ip = ip.To4()
	return net.IPv4(ip[0], ip[1], ip[2], 1).String()
}

// Reserve reserves a subnet and a bridge for the test until it ends; then
// the bridge and its iptables rules are removed. Cleanups registered after
// Reserve run before that (t.Cleanup is last in, first out): stop skiffd
// and its pods there.
func Reserve(t testing.TB) Net {
	t.Helper()
	if err := os.MkdirAll(LockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := rand.IntN(subnets)
	for i := 0; i < subnets; i++ {
		n, lock, err := take((start + i) % subnets)
		if err != nil {
			t.Fatal(err)
		}
		if lock == nil {
			continue
		}
		t.Cleanup(func() {
			if err := remove(n); err != nil {
				t.Error(err)
			}
			lock.Close() // releases the flock
		})
		return n
	}
	t.Fatalf("no free test subnet in 10.%d.0.0/12", firstOctet2)
	return Net{}
}

// take tries to reserve subnet number i; a nil lock means it is in use.
func take(i int) (Net, *os.File, error) {
	n := Net{
		Subnet: fmt.Sprintf("10.%d.%d.0/24", firstOctet2+i/256, i%256),
		Bridge: fmt.Sprintf("skt%d-%d", firstOctet2+i/256, i%256),
	}
	f, err := os.OpenFile(filepath.Join(LockDir, strings.ReplaceAll(n.Subnet, "/", "_")), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return n, nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return n, nil, nil
		}
		return n, nil, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	// Whoever held it before is gone: clear what a crash may have left.
	if err := remove(n); err != nil {
		f.Close()
		return n, nil, err
	}
	// Someone outside this scheme may use the range.
	if used, err := addressed(n.Subnet); err != nil || used {
		f.Close()
		return n, nil, err
	}
	return n, f, nil
}

// addressed reports whether an interface of the host has an address in
// subnet, or a network that overlaps it.
func addressed(subnet string) (bool, error) {
	_, want, err := net.ParseCIDR(subnet)
	if err != nil {
		return false, err
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && (ipnet.Contains(want.IP) || want.Contains(ipnet.IP)) {
			return true, nil
		}
	}
	return false, nil
}

// remove deletes the network's bridge and iptables rules.
func remove(n Net) error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", n.Bridge)); err == nil {
		out, err := exec.Command("ip", "link", "del", n.Bridge).CombinedOutput()
		// A veth may go by itself meanwhile, with its namespace.
		if _, statErr := os.Stat(filepath.Join("/sys/class/net", n.Bridge)); err != nil && statErr == nil {
			return fmt.Errorf("deleting bridge %s: %v: %s", n.Bridge, err, out)
		}
	}
	return network.RemoveHostRules(n.Bridge)
}
