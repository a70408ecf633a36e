package network

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's limits on a pod's resolver configuration (glibc's).
const (
	maxNameservers = 3
	maxSearches    = 32
	maxSearchChars = 2048
)

// systemdResolvConf lists systemd-resolved's upstream servers, for hosts
// whose /etc/resolv.conf only names its local stub.
const systemdResolvConf = "/run/systemd/resolve/resolv.conf"

// resolvConf is the content of a resolv.conf.
type resolvConf struct {
	Nameservers []string
	Searches    []string
	Options     []string
}

// parseResolvConf reads a resolv.conf as the kubelet does: nameserver lines
// accumulate, the last search and the last options line win, trailing dots
// of search domains go.
func parseResolvConf(data []byte) resolvConf {
	var rc resolvConf
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") || strings.HasPrefix(f[0], ";") {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) >= 2 {
				rc.Nameservers = append(rc.Nameservers, f[1])
			}
		case "search":
			rc.Searches = nil
			for _, s := range f[1:] {
				rc.Searches = append(rc.Searches, strings.TrimSuffix(s, "."))
			}
		case "options":
			rc.Options = slices.Clone(f[1:])
		}
	}
	return rc
}

// clusterDNS is the cluster's DNS as pods see it: the server skiffd
// runs (none: "") and the cluster domain.
type clusterDNS struct {
	server, domain string
}

// defaultDNSOptions are the kubelet's options for cluster DNS.
var defaultDNSOptions = []string{"ndots:5"}

// podResolvConf is the pod's resolver configuration, as the kubelet's
// GetPodDNS makes it from the host's (its --resolv-conf) and the cluster
// DNS: ClusterFirst (the default) and ClusterFirstWithHostNet use the
// cluster DNS with the search path <ns>.svc.<domain> svc.<domain> <domain>
// and the host's searches, and options ndots:5; Default, and ClusterFirst
// on a hostNetwork pod, take the host's configuration; None takes nothing
// but the pod's dnsConfig, which is merged last in every case.
//
// NOTE: without a cluster DNS server, ClusterFirst falls back to the
// host's configuration, as the kubelet does without --cluster-dns.
//
// NOTE: unlike the kubelet, skiff drops the host's loopback nameservers
// for a pod in its own network namespace: there, 127.0.0.53 (systemd-
// resolved's stub) or 127.0.0.1 (dnsmasq) is the pod itself and answers
// nothing. (The kubelet leaves that to the operator's --resolv-conf;
// Docker filters them the same way.) hostNetwork pods keep them.
func podResolvConf(pod Pod, host resolvConf, cluster clusterDNS) resolvConf {
	var rc resolvConf
	switch podDNSType(pod, cluster) {
	case corev1.DNSClusterFirst:
		rc = resolvConf{
			Nameservers: []string{cluster.server},
			Searches: appendNew([]string{pod.Namespace + ".svc." + cluster.domain, "svc." + cluster.domain, cluster.domain},
				host.Searches...),
			Options: slices.Clone(defaultDNSOptions),
		}
	case corev1.DNSDefault:
		rc = resolvConf{
			Nameservers: slices.Clone(host.Nameservers),
			Searches:    slices.Clone(host.Searches),
			Options:     slices.Clone(host.Options),
		}
		if !pod.HostNetwork {
			rc.Nameservers = slices.DeleteFunc(rc.Nameservers, isLoopback)
		}
	}
	if c := pod.DNSConfig; c != nil {
		rc.Nameservers = appendNew(rc.Nameservers, c.Nameservers...)
		rc.Searches = appendNew(rc.Searches, c.Searches...)
		rc.Options = mergeOptions(rc.Options, c.Options)
	}
	if len(rc.Nameservers) > maxNameservers {
		rc.Nameservers = rc.Nameservers[:maxNameservers]
	}
	rc.Searches = fitSearches(rc.Searches)
	return rc
}

// podDNSType is the kubelet's getPodDNSType: which configuration a pod
// gets — DNSClusterFirst (the cluster DNS), DNSDefault (the host's) or
// DNSNone.
func podDNSType(pod Pod, cluster clusterDNS) corev1.DNSPolicy {
	switch pod.DNSPolicy {
	case corev1.DNSNone:
		return corev1.DNSNone
	case corev1.DNSDefault:
		return corev1.DNSDefault
	case corev1.DNSClusterFirstWithHostNet:
	default: // ClusterFirst, the default
		if pod.HostNetwork {
			return corev1.DNSDefault
		}
	}
	if cluster.server == "" {
		return corev1.DNSDefault
	}
	return corev1.DNSClusterFirst
}

// fitSearches cuts the search list to the kubelet's limits: 32 domains,
// 2048 characters.
func fitSearches(searches []string) []string {
	if len(searches) > maxSearches {
		searches = searches[:maxSearches]
	}
	total := 0
	for i, s := range searches {
		total += len(s) + 1
		if total > maxSearchChars+1 {
			return searches[:i]
		}
	}
	return searches
}

func isLoopback(s string) bool {
	ip := net.ParseIP(s)
	return ip != nil && ip.IsLoopback()
}

func appendNew(list []string, more ...string) []string {
	for _, s := range more {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

// mergeOptions overrides or adds the pod's options ("name" or
// "name:value") over the base ones, keeping their order.
func mergeOptions(base []string, pod []corev1.PodDNSConfigOption) []string {
	out := slices.Clone(base)
	for _, o := range pod {
		opt := o.Name
		if o.Value != nil {
			opt += ":" + *o.Value
		}
		i := slices.IndexFunc(out, func(s string) bool { name, _, _ := strings.Cut(s, ":"); return name == o.Name })
		if i >= 0 {
			out[i] = opt
		} else {
			out = append(out, opt)
		}
	}
	return out
}

// bytes renders the configuration as a resolv.conf.
func (rc resolvConf) bytes() []byte {
	var b bytes.Buffer
	if len(rc.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(rc.Searches, " "))
	}
	for _, ns := range rc.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(rc.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(rc.Options, " "))
	}
	return b.Bytes()
}

// hostResolvConf reads the host's resolver configuration at path. A
// missing file is an empty configuration. When it names only loopback
// servers (a local stub resolver) and upstream (if not "") lists servers,
// upstream is used instead.
//
// NOTE: for the default /etc/resolv.conf, upstream is systemd-resolved's
// list of real servers, as kubeadm points the kubelet's --resolv-conf at it
// when systemd-resolved runs.
func hostResolvConf(path, upstream string) (resolvConf, error) {
	rc, err := readResolvConf(path)
	if err != nil {
		return resolvConf{}, err
	}
	onlyLoopback := len(rc.Nameservers) > 0 && !slices.ContainsFunc(rc.Nameservers, func(s string) bool { return !isLoopback(s) })
	if upstream != "" && onlyLoopback {
		if up, err := readResolvConf(upstream); err == nil && len(up.Nameservers) > 0 {
			return up, nil
		}
	}
	return rc, nil
}

func readResolvConf(path string) (resolvConf, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return resolvConf{}, nil
	}
	if err != nil {
		return resolvConf{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return parseResolvConf(data), nil
}
