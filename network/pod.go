package network

import corev1 "k8s.io/api/core/v1"

// Pod is what the network needs to know of a pod.
type Pod struct {
	UID       string
	Namespace string
	Name      string
	// HostNetwork pods keep the host's network: no namespace, the host's IP.
	HostNetwork bool
	// Hostname is the pod's hostname as its containers see it (spec.hostname,
	// else the pod name, cut to 63 characters); Subdomain is spec.subdomain.
	Hostname  string
	Subdomain string
	// SetHostnameAsFQDN is spec.setHostnameAsFQDN: the kernel's hostname
	// (and /etc/hostname) is the FQDN for a pod with a subdomain.
	SetHostnameAsFQDN bool
	// HostAliases are appended to /etc/hosts.
	HostAliases []corev1.HostAlias
	// DNSPolicy ("" = ClusterFirst) and DNSConfig shape /etc/resolv.conf.
	DNSPolicy corev1.DNSPolicy
	DNSConfig *corev1.PodDNSConfig
	// Ports are the hostPort mappings of the pod's containers.
	Ports []PortMapping
}

// PortMapping forwards HostIP:HostPort on the node to ContainerPort of the pod.
type PortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`         // "tcp", "udp" or "sctp" (lower case, as CNI wants it)
	HostIP        string `json:"hostIP,omitempty"` // "" = every address of the node
}

// Sandbox is a pod's network as its containers join it.
type Sandbox struct {
	// NetNSPath is the pod's network namespace; "" for hostNetwork pods.
	NetNSPath string
	// IP is the pod's IP (status.podIP): its own, or the host's.
	IP string
	// HostsPath and ResolvConfPath are the files to bind-mount at
	// /etc/hosts and /etc/resolv.conf.
	HostsPath      string
	ResolvConfPath string
	// HostnamePath is the file to bind-mount at /etc/hostname; "" for a
	// sandbox set up by a skiffd that wrote none (it is kept, not redone).
	HostnamePath string
	// Hostname is the containers' hostname (their UTS namespace's, and
	// HOSTNAME), as the hostname file holds it: the pod's, or its FQDN
	// (Pod.SetHostnameAsFQDN); "" for a hostNetwork pod, which keeps the
	// node's, and for a sandbox without the file.
	Hostname string
}
