package podworker

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
)

func TestSandboxPod(t *testing.T) {
	five := "5"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + strings.Repeat("x", 70), Namespace: "ns1", UID: "u1"},
		Spec: corev1.PodSpec{
			Subdomain:   "svc",
			HostAliases: []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo"}}},
			DNSPolicy:   corev1.DNSNone,
			DNSConfig:   &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &five}}},
			InitContainers: []corev1.Container{{Name: "init", Ports: []corev1.ContainerPort{
				{ContainerPort: 9000, HostPort: 19000, Protocol: corev1.ProtocolUDP},
			}}},
			Containers: []corev1.Container{
				{Name: "a", Ports: []corev1.ContainerPort{
					{ContainerPort: 80},                    // no hostPort: not mapped
					{ContainerPort: 8080, HostPort: 18080}, // TCP by default
					{ContainerPort: 8443, HostPort: 18443, HostIP: "127.0.0.1", Protocol: corev1.ProtocolTCP},
				}},
				{Name: "b", Ports: []corev1.ContainerPort{
					{ContainerPort: 8080, HostPort: 18080, Protocol: corev1.ProtocolTCP}, // the same mapping again
				}},
			},
		},
	}
	want := network.Pod{
		UID:         "u1",
		Namespace:   "ns1",
		Name:        pod.Name,
		Hostname:    "web-" + strings.Repeat("x", 59),
		Subdomain:   "svc",
		HostAliases: pod.Spec.HostAliases,
		DNSPolicy:   corev1.DNSNone,
		DNSConfig:   pod.Spec.DNSConfig,
		Ports: []network.PortMapping{
			{HostPort: 19000, ContainerPort: 9000, Protocol: "udp"},
			{HostPort: 18080, ContainerPort: 8080, Protocol: "tcp"},
			{HostPort: 18443, ContainerPort: 8443, Protocol: "tcp", HostIP: "127.0.0.1"},
		},
	}
	if diff := cmp.Diff(want, sandboxPod(pod)); diff != "" {
		t.Errorf("sandboxPod (-want,+got):\n%s", diff)
	}
}

func TestPodHostname(t *testing.T) {
	tests := map[string]struct {
		name, hostname, want string
	}{
		"pod name":                     {name: "job-a-x7k2p", want: "job-a-x7k2p"},
		"spec.hostname wins":           {name: "job-a-x7k2p", hostname: "web-0", want: "web-0"},
		"cut to 63":                    {name: strings.Repeat("a", 70), want: strings.Repeat("a", 63)},
		"no trailing dash after a cut": {name: strings.Repeat("a", 62) + "-b", want: strings.Repeat("a", 62)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: corev1.PodSpec{Hostname: tc.hostname}}
			if got := podHostname(pod); got != tc.want {
				t.Errorf("podHostname = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestShowSandboxError(t *testing.T) {
	creating := func(msg string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonContainerCreating, Message: msg}}
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	pod := &corev1.Pod{Status: corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: creating("")}},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "a", State: creating("")},
			{Name: "b", State: running},
			{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff, Message: "back-off"}}},
		},
	}}
	showSandboxError(pod, "pod network unavailable: CNI plugin \"bridge\" not found")
	const msg = "Failed to create pod sandbox: pod network unavailable: CNI plugin \"bridge\" not found"
	want := corev1.PodStatus{
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: creating(msg)}},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "a", State: creating(msg)},
			{Name: "b", State: running},
			{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff, Message: "back-off"}}},
		},
	}
	if diff := cmp.Diff(want, pod.Status); diff != "" {
		t.Errorf("after showSandboxError (-want,+got):\n%s", diff)
	}
	showSandboxError(pod, "")
	want.InitContainerStatuses[0].State = creating("")
	want.ContainerStatuses[0].State = creating("")
	if diff := cmp.Diff(want, pod.Status); diff != "" {
		t.Errorf("after clearing (-want,+got):\n%s", diff)
	}
}

func TestPodIPFieldRef(t *testing.T) {
	node := nodeInfo{hostIP: "192.0.2.2"}
	tests := map[string]struct {
		podIP, path, want string
	}{
		"pod IP once known":         {podIP: "10.88.0.7", path: "status.podIP", want: "10.88.0.7"},
		"pod IPs":                   {podIP: "10.88.0.7", path: "status.podIPs", want: "10.88.0.7"},
		"host IP is the node's":     {podIP: "10.88.0.7", path: "status.hostIP", want: "192.0.2.2"},
		"host network before admit": {path: "status.podIP", want: "192.0.2.2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Status: corev1.PodStatus{PodIP: tc.podIP}}
			got, err := fieldRefValue(pod, tc.path, node)
			if err != nil || got != tc.want {
				t.Errorf("fieldRefValue(%s) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
		})
	}
}

// fakeNetwork stands for package network in tests that only need one.
type fakeNetwork struct{}

func (fakeNetwork) Setup(context.Context, network.Pod) (network.Sandbox, error) {
	return network.Sandbox{}, nil
}
func (fakeNetwork) Teardown(context.Context, string) error { return nil }
func (fakeNetwork) Release(context.Context, string) error  { return nil }
func (fakeNetwork) List() ([]string, error)                { return nil, nil }

func TestApplySandbox(t *testing.T) {
	own := network.Sandbox{NetNSPath: "/n/netns/u1/cni-1", IP: "10.88.0.7", HostsPath: "/n/pods/u1/hosts", ResolvConfPath: "/n/pods/u1/resolv.conf", HostnamePath: "/n/pods/u1/hostname"}
	hostNet := network.Sandbox{IP: "192.0.2.2", HostsPath: "/n/pods/u2/hosts", ResolvConfPath: "/n/pods/u2/resolv.conf", HostnamePath: "/n/pods/u2/hostname"}
	tests := map[string]struct {
		net     Network
		sandbox network.Sandbox
		want    runtime.ContainerConfig
	}{
		"no network: the host's, files included": {
			want: runtime.ContainerConfig{Hostname: "p"},
		},
		"own network": {
			net: fakeNetwork{}, sandbox: own,
			want: runtime.ContainerConfig{Hostname: "p", NetNSPath: own.NetNSPath, HostsPath: own.HostsPath, ResolvConfPath: own.ResolvConfPath, HostnamePath: own.HostnamePath},
		},
		"host network: the node's hostname": {
			net: fakeNetwork{}, sandbox: hostNet,
			want: runtime.ContainerConfig{HostsPath: hostNet.HostsPath, ResolvConfPath: hostNet.ResolvConfPath, HostnamePath: hostNet.HostnamePath},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := &worker{m: &Manager{cfg: Config{Network: tc.net}}, sandbox: tc.sandbox}
			got := runtime.ContainerConfig{Hostname: "p"}
			applySandbox(&got, w.podSandbox())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("applySandbox (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestMayChangeNetwork(t *testing.T) {
	caps := func(names ...corev1.Capability) *corev1.SecurityContext {
		return &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: names}}
	}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want bool
	}{
		{"plain", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, false},
		{"NET_RAW and a drop of NET_ADMIN", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", SecurityContext: &corev1.SecurityContext{
			Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_RAW"}, Drop: []corev1.Capability{"NET_ADMIN"}}}}}}, false},
		{"sysctl", corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}}}}, true},
		{"privileged init container", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i", SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)}}}}, true},
		{"NET_ADMIN", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", SecurityContext: caps("NET_ADMIN")}}}, true},
		{"cap_sys_admin, lower case", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", SecurityContext: caps("cap_sys_admin")}}}, true},
		{"ALL", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", SecurityContext: caps("ALL")}}}, true},
		{"ephemeral container with NET_ADMIN", corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", SecurityContext: caps("NET_ADMIN")}}}}, true},
	} {
		if got := mayChangeNetwork(&corev1.Pod{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: mayChangeNetwork = %v, want %v", tc.name, got, tc.want)
		}
	}
}
