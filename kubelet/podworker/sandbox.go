package podworker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
)

// Network is what the pod worker needs from pod networking; package
// network's *Network implements it. A nil Network in Config keeps every pod
// in the host's network.
type Network interface {
	Setup(ctx context.Context, pod network.Pod) (network.Sandbox, error)
	Teardown(ctx context.Context, uid string) error
	Release(ctx context.Context, uid string) error
	List() ([]string, error)
}

var _ Network = (*network.Network)(nil)

// admitWithSandbox finds the pod's runtime (podRuntimeType) and gives the
// pod its network, as the kubelet's RunPodSandbox does before any container
// starts, and admits the pod (see admit) with its IP in the same write. A
// failure admits the pod with its containers waiting in ContainerCreating
// and the error as message, records the kubelet's Warning event
// (FailedCreatePodSandBox), and is retried with back-off until it works or
// the pod is stopped (its containers then never start). ok is false when the
// daemon stops or the pod is gone.
//
// NOTE: the network is set up before the admission's status write so that
// the pod's first status carries its IP: one commit fewer on every pod's
// way to its first container. Setup is idempotent, so a crash between the
// two finds the same sandbox again; a pod deleted meanwhile has its
// network torn down with it (forget).
//
// NOTE: a pod whose network cannot be set up (CNI plugins missing, subnet
// clashing) waits, as on a kubelet whose CNI is broken (ContainerCreating,
// FailedCreatePodSandBox), instead of falling back to the host's network:
// a pod silently sharing the node's ports and addresses would behave
// differently from the same manifest on a cluster. Likewise a pod whose
// RuntimeClass handler the node lacks never runs with another runtime.
func (w *worker) admitWithSandbox(ctx context.Context, pod *corev1.Pod) (_ *corev1.Pod, ok bool) {
	net := w.m.cfg.Network
	write := w.admit
	for failures := 0; ; failures++ {
		runtimeType, err := w.podRuntimeType(pod)
		var sb network.Sandbox
		if err == nil && net != nil {
			sb, err = net.Setup(ctx, sandboxPod(pod))
		}
		if err == nil {
			w.runtimeType = runtimeType
			w.sandbox = sb
			pod, err = write(func(p *corev1.Pod) {
				if net != nil {
					setPodIP(&p.Status, sb.IP)
				}
				showSandboxError(p, "")
			})
			if err != nil {
				w.logError("recording the pod IP", err)
				return nil, false
			}
			return pod, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		w.log.WithError(err).Warn("creating the pod sandbox")
		w.event(corev1.EventTypeWarning, reasonFailedCreatePodSandBox, "%s%v", sandboxErrorPrefix, err)
		msg := err.Error()
		if pod, err = write(func(p *corev1.Pod) { showSandboxError(p, msg) }); err != nil {
			w.logError("recording the pod sandbox error", err)
			return nil, false
		}
		write = w.update
		if !w.waitSandboxRetry(ctx, backoffDelay(w.m.cfg.RestartBackoffBase, w.m.cfg.RestartBackoffMax, failures)) {
			return pod, ctx.Err() == nil
		}
	}
}

// waitSandboxRetry waits d; false when the daemon stops or the pod is
// being stopped.
func (w *worker) waitSandboxRetry(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-w.stop:
	}
	return false
}

// sandboxErrorPrefix starts the message of the kubelet's
// FailedCreatePodSandBox event, and of containers waiting on the pod network.
const sandboxErrorPrefix = "Failed to create pod sandbox: "

// reasonFailedCreatePodSandBox is the kubelet's event reason for a pod
// whose sandbox (here: its network) could not be made.
const reasonFailedCreatePodSandBox = "FailedCreatePodSandBox"

// showSandboxError sets (or, with msg "", clears) the sandbox error on the
// containers still waiting in ContainerCreating.
func showSandboxError(p *corev1.Pod, msg string) {
	if msg != "" {
		msg = sandboxErrorPrefix + msg
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			wait := list[i].State.Waiting
			if wait == nil || wait.Reason != reasonContainerCreating {
				continue
			}
			if msg != "" || strings.HasPrefix(wait.Message, sandboxErrorPrefix) {
				wait.Message = msg
			}
		}
	}
}

// podSandbox is the pod's network as a container config takes it: nil
// when the node runs no pod network.
func (w *worker) podSandbox() *network.Sandbox {
	if w.m.cfg.Network == nil {
		return nil
	}
	sb := w.sandbox
	return &sb
}

// applySandbox puts the container into the pod's network sb and gives it
// the pod's hosts and resolv.conf (nothing with a nil sb: the host's).
func applySandbox(cfg *runtime.ContainerConfig, sb *network.Sandbox) {
	if sb == nil {
		return
	}
	cfg.NetNSPath = sb.NetNSPath
	cfg.HostsPath = sb.HostsPath
	cfg.ResolvConfPath = sb.ResolvConfPath
	cfg.HostnamePath = sb.HostnamePath
	switch {
	case cfg.NetNSPath == "":
		// NOTE: a hostNetwork pod sees the node's hostname (containerd CRI
		// shares the host's UTS namespace with it).
		cfg.Hostname = ""
	case sb.Hostname != "":
		cfg.Hostname = sb.Hostname // its FQDN with setHostnameAsFQDN
	}
}

// teardownSandbox releases the pod's network once none of its containers
// will run again; status.podIP stays, as with the kubelet. With the pod
// (nil when it is gone from the store) and none of its containers able to
// change the network, the sandbox may serve another pod.
func (m *Manager) teardownSandbox(uid types.UID, pod *corev1.Pod) {
	if m.cfg.Network == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	release := m.cfg.Network.Teardown
	if pod != nil && !mayChangeNetwork(pod) {
		release = m.cfg.Network.Release
	}
	if err := release(ctx, string(uid)); err != nil {
		logrus.WithError(err).WithField("uid", uid).Error("tearing down the pod network")
	}
}

func setPodIP(s *corev1.PodStatus, ip string) {
	s.PodIP = ip
	s.PodIPs = []corev1.PodIP{{IP: ip}}
}

// podIP is the pod's IP once it has one, else the node's (status.podIP in
// the downward API).
func podIP(pod *corev1.Pod, node nodeInfo) string {
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	return node.hostIP
}

// podHostname is the hostname of the pod's containers: spec.hostname, else
// the pod name, cut to 63 characters as the kubelet cuts it.
func podHostname(pod *corev1.Pod) string {
	hostname := pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	if len(hostname) > 63 {
		hostname = strings.TrimRight(hostname[:63], "-.")
	}
	return hostname
}

// sandboxPod is the pod as package network needs it.
func sandboxPod(pod *corev1.Pod) network.Pod {
	return network.Pod{
		UID:               string(pod.UID),
		Namespace:         pod.Namespace,
		Name:              pod.Name,
		HostNetwork:       pod.Spec.HostNetwork,
		Hostname:          podHostname(pod),
		Subdomain:         pod.Spec.Subdomain,
		HostAliases:       pod.Spec.HostAliases,
		SetHostnameAsFQDN: pod.Spec.SetHostnameAsFQDN != nil && *pod.Spec.SetHostnameAsFQDN,
		DNSPolicy:         pod.Spec.DNSPolicy,
		DNSConfig:         pod.Spec.DNSConfig,
		Ports:             hostPorts(pod),
	}
}

// mayChangeNetwork reports whether a container of the pod may change its
// network namespace beyond its sockets: a namespaced sysctl, or a container
// that is privileged or granted NET_ADMIN or SYS_ADMIN.
func mayChangeNetwork(pod *corev1.Pod) bool {
	if sc := pod.Spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
		return true
	}
	mayAdminister := func(sc *corev1.SecurityContext) bool {
		if sc == nil {
			return false
		}
		if sc.Privileged != nil && *sc.Privileged {
			return true
		}
		if sc.Capabilities == nil {
			return false
		}
		add := make([]string, len(sc.Capabilities.Add))
		for i, c := range sc.Capabilities.Add {
			add[i] = string(c)
		}
		return runtime.Grants(add, "NET_ADMIN") || runtime.Grants(add, "SYS_ADMIN")
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		if slices.ContainsFunc(list, func(c corev1.Container) bool { return mayAdminister(c.SecurityContext) }) {
			return true
		}
	}
	return slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return mayAdminister(c.SecurityContext) })
}

// hostPorts are the pod's hostPort mappings (the kubelet's
// MakePortMappings): every container port with a hostPort, TCP unless
// said otherwise, each host port and protocol once.
func hostPorts(pod *corev1.Pod) []network.PortMapping {
	var out []network.PortMapping
	seen := map[string]bool{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, p := range c.Ports {
				if p.HostPort <= 0 {
					continue
				}
				proto := p.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				key := fmt.Sprintf("%s/%s/%d", p.HostIP, proto, p.HostPort)
				if seen[key] {
					continue
				}
				seen[key] = true
				out = append(out, network.PortMapping{
					HostPort:      p.HostPort,
					ContainerPort: p.ContainerPort,
					Protocol:      strings.ToLower(string(proto)),
					HostIP:        p.HostIP,
				})
			}
		}
	}
	return out
}
