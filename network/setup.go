package network

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	gocni "github.com/containerd/go-cni"
	"github.com/sirupsen/logrus"
)

// Setup gives the pod its sandbox: a network namespace attached to the
// bridge with an IP of the subnet, its hostPorts forwarded, and its hosts
// and resolv.conf files. A hostNetwork pod gets only the files and the
// host's IP.
//
// A pod keeps one sandbox for its whole life: if Setup completed before
// (skiffd restarted since), it returns that sandbox unchanged. Leftovers
// of an interrupted Setup are torn down and the sandbox made afresh. On
// error nothing is left behind; errors from Prepare wrap ErrUnavailable.
// A pod whose hostname cannot be made (kernelHostname) fails before
// anything is made, as the kubelet fails to generate its sandbox config.
func (n *Network) Setup(ctx context.Context, pod Pod) (Sandbox, error) {
	if !pod.HostNetwork {
		if _, err := pod.kernelHostname(n.cfg.ClusterDomain); err != nil {
			return Sandbox{}, err
		}
	}
	return n.setup(ctx, pod)
}

// setup is Setup once the pod's hostname is known to be good.
func (n *Network) setup(ctx context.Context, pod Pod) (_ Sandbox, retErr error) {
	if err := validUID(pod.UID); err != nil {
		return Sandbox{}, err
	}
	if sb, ok, err := n.Find(pod.UID); err != nil || ok {
		return sb, err
	}
	if pod.HostNetwork {
		return n.setupHostNetwork(pod)
	}
	start := time.Now()
	if err := n.Prepare(); err != nil {
		return Sandbox{}, err
	}
	if n.hasLeftovers(pod.UID) {
		if err := n.Teardown(ctx, pod.UID); err != nil {
			return Sandbox{}, fmt.Errorf("cleaning up the pod's earlier sandbox: %w", err)
		}
	}
	if len(pod.Ports) == 0 && n.pool != nil {
		if sb, ok := n.takePooled(pod); ok {
			return sb, nil
		}
		sb, err := n.makeForPod(ctx, pod)
		if err != nil {
			return Sandbox{}, err
		}
		logrus.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name, "ip": sb.IP, "took": time.Since(start)}).Debug("pod network set up")
		return sb, nil
	}
	defer func() {
		if retErr != nil {
			_ = n.undo(pod.UID) // NOTE: the sweep of pods' networks tries again
		}
	}()
	st, err := n.attach(ctx, pod.UID, pod)
	if err != nil {
		return Sandbox{}, err
	}
	if err := n.writeFiles(pod, st.IP); err != nil {
		return Sandbox{}, err
	}
	if err := n.writeState(pod.UID, st); err != nil {
		return Sandbox{}, err
	}
	logrus.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name, "ip": st.IP, "took": time.Since(start)}).Debug("pod network set up")
	return n.sandbox(pod.UID, st), nil
}

func (n *Network) setupHostNetwork(pod Pod) (Sandbox, error) {
	if err := os.MkdirAll(n.podDir(pod.UID), 0o700); err != nil {
		return Sandbox{}, fmt.Errorf("creating pod network dir: %w", err)
	}
	st := state{HostNetwork: true, IP: n.cfg.HostIP}
	if err := n.writeFiles(pod, st.IP); err != nil {
		return Sandbox{}, err
	}
	if err := n.writeState(pod.UID, st); err != nil {
		return Sandbox{}, err
	}
	return n.sandbox(pod.UID, st), nil
}

// undo tears down a half-made sandbox, with a context of its own: the
// caller's may be what ended the setup.
func (n *Network) undo(uid string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := n.Teardown(ctx, uid)
	if err != nil {
		logrus.WithError(err).WithField("uid", uid).Error("undoing a failed pod network setup")
	}
	return err
}

// hasLeftovers reports whether anything of an earlier sandbox of the pod
// remains on disk.
func (n *Network) hasLeftovers(uid string) bool {
	for _, dir := range []string{n.netnsDir(uid), n.podDir(uid)} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			return true
		}
	}
	return false
}

// cniFor is the plugin chain for a pod with or without hostPorts.
func (n *Network) cniFor(hostPorts bool) gocni.CNI {
	if hostPorts {
		return n.cniHostPorts
	}
	return n.cni
}

// namespaceOpts are the CNI arguments of a pod, as the CRI plugin passes them.
func (n *Network) namespaceOpts(namespace, name, uid string, ports []PortMapping) []gocni.NamespaceOpts {
	opts := []gocni.NamespaceOpts{gocni.WithLabels(map[string]string{
		"IgnoreUnknown":              "1",
		"K8S_POD_NAMESPACE":          namespace,
		"K8S_POD_NAME":               name,
		"K8S_POD_INFRA_CONTAINER_ID": uid,
		"K8S_POD_UID":                uid,
	})}
	if len(ports) > 0 {
		mappings := make([]gocni.PortMapping, len(ports))
		for i, p := range ports {
			mappings[i] = gocni.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: p.Protocol, HostIP: p.HostIP}
		}
		opts = append(opts, gocni.WithCapabilityPortMap(mappings))
	}
	return opts
}

// podIP is the first IPv4 address CNI gave the pod's eth0.
func podIP(res *gocni.Result) (string, error) {
	if iface, ok := res.Interfaces["eth0"]; ok {
		for _, c := range iface.IPConfigs {
			if c.IP.To4() != nil {
				return c.IP.String(), nil
			}
		}
	}
	return "", errors.New("setting up pod network: CNI gave eth0 no IPv4 address")
}

// writeFiles writes the pod's hosts, resolv.conf and hostname, readable by
// any user of the pod's containers.
func (n *Network) writeFiles(pod Pod, ip string) error {
	var hostHosts []byte
	if pod.HostNetwork {
		b, err := os.ReadFile(n.cfg.HostsFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("reading the host's hosts file: %w", err)
		}
		hostHosts = b
	}
	upstream := ""
	if n.cfg.ResolvConf == DefaultResolvConf {
		upstream = systemdResolvConf
	}
	host, err := hostResolvConf(n.cfg.ResolvConf, upstream)
	if err != nil {
		return err
	}
	dir := n.podDir(pod.UID)
	if err := writeFileAtomic(filepath.Join(dir, "hosts"), hostsFile(pod, ip, n.cfg.ClusterDomain, hostHosts), 0o644); err != nil {
		return fmt.Errorf("writing hosts file: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dir, "resolv.conf"), podResolvConf(pod, host, clusterDNS{server: n.cfg.ClusterDNS, domain: n.cfg.ClusterDomain}).bytes(), 0o644); err != nil {
		return fmt.Errorf("writing resolv.conf: %w", err)
	}
	// NOTE: as containerd CRI writes a sandbox's hostname file: the pod's
	// hostname, or the node's for a hostNetwork pod (the kubelet gives
	// such a sandbox no hostname).
	var hostname string
	if pod.HostNetwork {
		hostname, err = os.Hostname()
		if err != nil {
			return fmt.Errorf("reading the node's hostname: %w", err)
		}
	} else if hostname, err = pod.kernelHostname(n.cfg.ClusterDomain); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, "hostname"), []byte(hostname+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing hostname file: %w", err)
	}
	return nil
}
