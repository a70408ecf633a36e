package network

import (
	"bytes"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// hostsFile is the pod's /etc/hosts as the kubelet writes it: for a pod
// with its own network, the localhost boilerplate and the pod's IP with
// its hostname (its FQDN first when it has a subdomain); for a hostNetwork
// pod, the host's hosts file. Host aliases come last, one line per IP.
func hostsFile(pod Pod, ip, clusterDomain string, hostHosts []byte) []byte {
	var b bytes.Buffer
	if pod.HostNetwork {
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		// NOTE: as the kubelet's nodeHostsFileContent: the host's file as
		// it is, even without a last newline.
		b.Write(hostHosts)
	} else {
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		if domain := hostDomain(pod, clusterDomain); domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, pod.Hostname, domain, pod.Hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, pod.Hostname)
		}
	}
	b.Write(hostAliasLines(pod.HostAliases))
	return b.Bytes()
}

// hostDomain is "<subdomain>.<namespace>.svc.<cluster domain>" for a pod
// with a subdomain, else "".
func hostDomain(pod Pod, clusterDomain string) string {
	if pod.Subdomain == "" || clusterDomain == "" {
		return ""
	}
	return fmt.Sprintf("%s.%s.svc.%s", pod.Subdomain, pod.Namespace, clusterDomain)
}

// maxKernelHostname is the longest hostname the kernel takes (the nodename
// of struct utsname holds 64 characters and a NUL).
const maxKernelHostname = 64

// kernelHostname is the hostname the pod's containers get from the kernel,
// and /etc/hostname: the pod's hostname, or with setHostnameAsFQDN and a
// subdomain its FQDN, which must fit the kernel's 64 characters (the
// kubelet's GetNodenameForKernel; its error, which fails the sandbox). A
// hostNetwork pod shares the node's and gets none of its own.
func (pod Pod) kernelHostname(clusterDomain string) (string, error) {
	domain := hostDomain(pod, clusterDomain)
	if !pod.SetHostnameAsFQDN || domain == "" {
		return pod.Hostname, nil
	}
	fqdn := pod.Hostname + "." + domain
	if len(fqdn) > maxKernelHostname {
		return "", fmt.Errorf("failed to construct FQDN from pod hostname and cluster domain, FQDN %s is too long (%d characters is the max, %d characters requested)",
			fqdn, maxKernelHostname, len(fqdn))
	}
	return fqdn, nil
}

func hostAliasLines(aliases []corev1.HostAlias) []byte {
	if len(aliases) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}
