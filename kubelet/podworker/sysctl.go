package podworker

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// reasonSysctlForbidden is the kubelet's rejection reason for a pod asking
// for a sysctl it does not allow.
const reasonSysctlForbidden = "SysctlForbidden"

// safeSysctls are the kubelet's safe sysctls (SafeSysctlAllowlist, 1.34),
// with the namespace each belongs to.
var safeSysctls = map[string]string{
	"kernel.shm_rmid_forced":              "ipc",
	"net.ipv4.ip_local_port_range":        "net",
	"net.ipv4.tcp_syncookies":             "net",
	"net.ipv4.ping_group_range":           "net",
	"net.ipv4.ip_unprivileged_port_start": "net",
	"net.ipv4.ip_local_reserved_ports":    "net",
	"net.ipv4.tcp_keepalive_time":         "net",
	"net.ipv4.tcp_fin_timeout":            "net",
	"net.ipv4.tcp_keepalive_intvl":        "net",
	"net.ipv4.tcp_keepalive_probes":       "net",
	"net.ipv4.tcp_rmem":                   "net",
	"net.ipv4.tcp_wmem":                   "net",
}

// forbiddenSysctl returns the kubelet's admission message for the first
// sysctl of the pod it would refuse: one not allowlisted, or one of a
// namespace the pod shares with the host. "" when all are allowed.
func forbiddenSysctl(pod *corev1.Pod, hostNetwork bool) string {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return ""
	}
	for _, s := range sc.Sysctls {
		name := strings.ReplaceAll(s.Name, "/", ".")
		ns, ok := safeSysctls[name]
		switch {
		case !ok:
			return fmt.Sprintf("forbidden sysctl: %q not allowlisted", name)
		case ns == "net" && hostNetwork, ns == "ipc" && pod.Spec.HostIPC:
			return fmt.Sprintf("forbidden sysctl: %q not allowed with host %s enabled", name, ns)
		}
	}
	return ""
}

// usesHostNetwork reports whether the pod's containers share the host's
// network namespace: hostNetwork pods, and every pod while skiffd runs
// without a pod network.
func (m *Manager) usesHostNetwork(pod *corev1.Pod) bool {
	return pod.Spec.HostNetwork || m.cfg.Network == nil
}
