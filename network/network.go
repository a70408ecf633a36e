// Package network gives each pod its own network namespace, joined to a
// bridge on this node through CNI (the containernetworking plugins bridge,
// host-local and portmap, driven by containerd's go-cni library, as
// containerd's CRI plugin does; lo is brought up in-process), plus a few
// iptables chains per bridge (hostRules: masquerade, forwarding, no
// loopback from pods), and writes the pod's /etc/hosts and
// /etc/resolv.conf the way the kubelet manages them.
//
// Layout under Config.DataDir:
//
//	net.d/10-skiff.conflist   the CNI network (unless Config.ConfDir says elsewhere)
//	ipam/                     host-local's address reservations
//	netns/<pod uid>/cni-…     the pod's network namespace (bind mount)
//	pods/<pod uid>/           sandbox.json, hosts, resolv.conf
//
// The network namespace of a pod is found again from its UID alone, so a
// restarted skiffd re-uses it instead of creating a second one.
package network

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	gocni "github.com/containerd/go-cni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/coreos/go-iptables/iptables"
)

// Error classes (errors.Is).
var (
	// ErrUnavailable: pod networking cannot work on this machine as
	// configured (a CNI plugin or iptables is missing, the subnet clashes
	// with a host route, the bridge's name is taken by another kind of
	// interface). The daemon still runs; pods that need a network wait.
	ErrUnavailable = errors.New("pod network unavailable")
	// ErrSubnetOverlap: the subnet overlaps a route of the host other than
	// the bridge's own. An error that is ErrSubnetOverlap is also
	// ErrUnavailable.
	ErrSubnetOverlap = errors.New("pod subnet overlaps a host route")
)

// overlapError is ErrSubnetOverlap with the subnet and the route.
type overlapError struct{ subnet, route string }

func (e overlapError) Error() string {
	return fmt.Sprintf("pod subnet %s overlaps the host route %s", e.subnet, e.route)
}

func (e overlapError) Is(target error) bool {
	return target == ErrSubnetOverlap || target == ErrUnavailable
}

// Defaults of Config.
const (
	DefaultSubnet        = "10.88.0.0/16"
	DefaultBridge        = "skiff0"
	DefaultClusterDomain = "cluster.local"
	DefaultResolvConf    = "/etc/resolv.conf"
	DefaultHostsFile     = "/etc/hosts"
	// DefaultPoolSize is skiffd's --pod-network-pool.
	DefaultPoolSize = 8
)

// DefaultPluginDirs are where Debian's containernetworking-plugins and the
// upstream release tarball install the CNI plugins.
var DefaultPluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// networkName is the CNI network's name (and the conflist's).
const networkName = "skiff"

// plugins are the CNI plugin binaries the network needs.
var plugins = []string{"bridge", "host-local", "portmap"}

// Config configures the pod network.
type Config struct {
	// DataDir holds the network's state (see the package doc); required.
	DataDir string
	// ConfDir is where the conflist is written; "" = DataDir/net.d.
	ConfDir string
	// PluginDirs are searched for the CNI plugin binaries; nil = DefaultPluginDirs.
	PluginDirs []string
	// Subnet is the pods' IPv4 range; "" = DefaultSubnet. It must not
	// overlap a route of the host.
	Subnet string
	// Bridge is the host bridge the pods are attached to; "" = DefaultBridge.
	Bridge string
	// HostIP is the podIP of hostNetwork pods (the node's InternalIP).
	HostIP string
	// ClusterDomain completes hostname.subdomain.namespace.svc.<domain> in
	// /etc/hosts; "" = DefaultClusterDomain.
	ClusterDomain string
	// ResolvConf is the host's resolver configuration that pods inherit
	// (the kubelet's --resolv-conf); "" = DefaultResolvConf.
	ResolvConf string
	// ClusterDNS is the IP of the cluster's DNS server, the nameserver of
	// pods with dnsPolicy ClusterFirst (the kubelet's --cluster-dns); ""
	// = none: those pods get the host's resolvers, as on a kubelet
	// without cluster DNS.
	ClusterDNS string
	// HostsFile is the host's hosts file, the base of hostNetwork pods'
	// /etc/hosts; "" = DefaultHostsFile.
	HostsFile string
	// PoolSize is how many sandboxes RunPool keeps made ahead for pods
	// without hostPorts (pool.go); 0 = none: each pod's is made for it.
	PoolSize int
}

// Network sets up and tears down pod sandboxes. It is safe for concurrent
// use by different pods; calls for one pod must not overlap.
type Network struct {
	cfg      Config
	subnet   *net.IPNet
	conflist string
	// cni attaches pods without hostPorts, cniHostPorts those with (its
	// chain adds portmap); both are the same network, "skiff".
	cni, cniHostPorts gocni.CNI

	mu       sync.Mutex
	prepared bool // the host rules are in place
	// stale are sandboxes of the pool for RunPool to tear down: those an
	// earlier run left untaken (SweepPool), those a teardown failed for.
	stale []string

	pool *pool // nil without Config.PoolSize

	// tearing holds a channel for each pod whose teardown runs, closed
	// when it ends (lockTeardown).
	tearing map[string]chan struct{}
}

// lockTeardown waits until no other teardown of uid runs and keeps others
// out until the returned func is called. A pod may be torn down twice at
// once (skiffd's recovery sweep beside the pod's worker); the second must
// find what the first left, or a sandbox recycled by both would go to the
// pool twice and serve two pods.
func (n *Network) lockTeardown(uid string) (unlock func()) {
	for {
		n.mu.Lock()
		running, busy := n.tearing[uid]
		if !busy {
			done := make(chan struct{})
			if n.tearing == nil {
				n.tearing = map[string]chan struct{}{}
			}
			n.tearing[uid] = done
			n.mu.Unlock()
			return func() {
				n.mu.Lock()
				delete(n.tearing, uid)
				n.mu.Unlock()
				close(done)
			}
		}
		n.mu.Unlock()
		<-running
	}
}

// New writes the CNI configuration and returns the Network. It fails only
// on an invalid Config or an unwritable DataDir: a machine without the
// plugins still gets a Network, whose Status and Setup report ErrUnavailable.
func New(cfg Config) (*Network, error) {
	cfg = withDefaults(cfg)
	if cfg.DataDir == "" {
		return nil, errors.New("network: no data dir")
	}
	_, subnet, err := net.ParseCIDR(cfg.Subnet)
	if err != nil || subnet.IP.To4() == nil {
		return nil, fmt.Errorf("network: subnet %q is not an IPv4 CIDR", cfg.Subnet)
	}
	if ones, _ := subnet.Mask.Size(); ones > 30 {
		return nil, fmt.Errorf("network: subnet %s is too small", cfg.Subnet)
	}
	if err := validBridgeName(cfg.Bridge); err != nil {
		return nil, err
	}
	n := &Network{cfg: cfg, subnet: subnet, conflist: filepath.Join(cfg.ConfDir, "10-"+networkName+".conflist")}
	if cfg.PoolSize > 0 {
		n.pool = newPool(cfg.PoolSize)
	}
	for _, dir := range []string{cfg.ConfDir, n.ipamDir(), filepath.Join(cfg.DataDir, "netns"), filepath.Join(cfg.DataDir, "pods")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	conf, err := conflist(cfg.Bridge, subnet.String(), n.ipamDir(), false)
	if err != nil {
		return nil, err
	}
	if err := writeFileIfChanged(n.conflist, conf, 0o600); err != nil {
		return nil, fmt.Errorf("writing CNI config: %w", err)
	}
	if n.cni, err = newCNI(cfg, gocni.WithConfListFile(n.conflist)); err != nil {
		return nil, err
	}
	// NOTE: the hostPort variant is not written out: the file above is the
	// network as an operator looks at it, this one only adds portmap.
	withPorts, err := conflist(cfg.Bridge, subnet.String(), n.ipamDir(), true)
	if err != nil {
		return nil, err
	}
	if n.cniHostPorts, err = newCNI(cfg, gocni.WithConfListBytes(withPorts)); err != nil {
		return nil, err
	}
	return n, nil
}

// newCNI is a go-cni instance with the pod network of conf (eth0); Setup
// brings lo up itself (loopbackUp).
func newCNI(cfg Config, conf gocni.Opt) (gocni.CNI, error) {
	c, err := gocni.New(
		gocni.WithPluginDir(cfg.PluginDirs),
		gocni.WithPluginConfDir(cfg.ConfDir),
		gocni.WithMinNetworkCount(1),
		gocni.WithInterfacePrefix("eth"),
	)
	if err != nil {
		return nil, fmt.Errorf("initializing CNI: %w", err)
	}
	if err := c.Load(conf); err != nil {
		return nil, fmt.Errorf("loading CNI config: %w", err)
	}
	return c, nil
}

func withDefaults(cfg Config) Config {
	if cfg.ConfDir == "" && cfg.DataDir != "" {
		cfg.ConfDir = filepath.Join(cfg.DataDir, "net.d")
	}
	if cfg.PluginDirs == nil {
		cfg.PluginDirs = DefaultPluginDirs
	}
	if cfg.Subnet == "" {
		cfg.Subnet = DefaultSubnet
	}
	if cfg.Bridge == "" {
		cfg.Bridge = DefaultBridge
	}
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = DefaultClusterDomain
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = DefaultResolvConf
	}
	if cfg.HostsFile == "" {
		cfg.HostsFile = DefaultHostsFile
	}
	return cfg
}

// validBridgeName checks a Linux interface name (at most 15 bytes, no '/'
// or whitespace).
func validBridgeName(name string) error {
	if len(name) > 15 || strings.ContainsAny(name, "/ \t\n:") || name == "." || name == ".." {
		return fmt.Errorf("network: %q is not a valid bridge name", name)
	}
	return nil
}

// Status reports whether pods can get a network now: every CNI plugin is
// installed, the subnet does not clash with a host route (ErrSubnetOverlap)
// and the bridge's name is free or a bridge's. It wraps ErrUnavailable
// with the reason.
func (n *Network) Status() error {
	if err := n.pluginsInstalled(); err != nil {
		return err
	}
	routes, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return fmt.Errorf("%w: reading host routes: %v", ErrUnavailable, err)
	}
	if r, ok := clashingRoute(string(routes), n.subnet, n.cfg.Bridge); ok {
		return overlapError{subnet: n.subnet.String(), route: r}
	}
	if err := notABridge(n.cfg.Bridge); err != nil {
		return err
	}
	return n.cni.Status()
}

// Prepare checks Status and installs the node's iptables rules of the
// network (hostRules), once per process: skiffd calls it at start, Setup
// until it has succeeded.
func (n *Network) Prepare() error {
	if err := n.Status(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.prepared {
		return nil
	}
	ipt, err := iptables.New()
	if err != nil {
		return fmt.Errorf("%w: %v (install iptables)", ErrUnavailable, err)
	}
	if err := (hostRules{bridge: n.cfg.Bridge, subnet: n.subnet.String()}).ensure(ipt); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	n.prepared = true
	return nil
}

// notABridge reports a network interface named name that is not a bridge:
// the bridge plugin would refuse every pod.
//
// NOTE: the device type in uevent, not the bridge/ directory of sysfs: that
// one appears a moment after the device, while the bridge plugin of a
// concurrent Setup is creating it.
func notABridge(name string) error {
	uevent, err := os.ReadFile(filepath.Join("/sys/class/net", name, "uevent"))
	if err != nil {
		return nil // none (yet): the bridge plugin creates it
	}
	for _, line := range strings.Split(string(uevent), "\n") {
		if line == "DEVTYPE=bridge" {
			return nil
		}
	}
	return fmt.Errorf("%w: the interface %s exists and is not a bridge (use another bridge name)", ErrUnavailable, name)
}

func (n *Network) pluginsInstalled() error {
	for _, p := range plugins {
		if _, err := invoke.FindInPath(p, n.cfg.PluginDirs); err != nil {
			return fmt.Errorf("%w: CNI plugin %q not found in %s (install containernetworking-plugins)",
				ErrUnavailable, p, strings.Join(n.cfg.PluginDirs, ":"))
		}
	}
	return nil
}

func (n *Network) ipamDir() string { return filepath.Join(n.cfg.DataDir, "ipam") }

// netnsDir holds the pod's network namespace mount, and nothing else.
func (n *Network) netnsDir(uid string) string { return filepath.Join(n.cfg.DataDir, "netns", uid) }

// podDir holds the pod's sandbox.json, hosts and resolv.conf.
func (n *Network) podDir(uid string) string { return filepath.Join(n.cfg.DataDir, "pods", uid) }

// writeFileIfChanged writes data to path unless path holds it already: a
// restart on a full disk must not need to write the same file again.
func writeFileIfChanged(path string, data []byte, perm os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return writeFileAtomic(path, data, perm)
}

// writeFileAtomic writes data to path through a temporary file and a
// rename, so that a crash leaves either the old file or the new one.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
