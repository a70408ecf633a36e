package network

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestHostsFile(t *testing.T) {
	const boilerplate = "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n"
	aliases := []corev1.HostAlias{
		{IP: "127.0.0.1", Hostnames: []string{"foo.local", "bar.local"}},
		{IP: "10.1.2.3", Hostnames: []string{"foo.remote"}},
	}
	tests := map[string]struct {
		pod       Pod
		hostHosts string
		want      string
	}{
		"own network": {
			pod:  Pod{Namespace: "default", Hostname: "job-a-x7k2p"},
			want: boilerplate + "10.88.0.5\tjob-a-x7k2p\n",
		},
		"subdomain gives the FQDN first": {
			pod:  Pod{Namespace: "ns1", Hostname: "web-0", Subdomain: "web"},
			want: boilerplate + "10.88.0.5\tweb-0.web.ns1.svc.cluster.local\tweb-0\n",
		},
		"host aliases": {
			pod: Pod{Namespace: "default", Hostname: "p", HostAliases: aliases},
			want: boilerplate + "10.88.0.5\tp\n" +
				"\n# Entries added by HostAliases.\n" +
				"127.0.0.1\tfoo.local\tbar.local\n" +
				"10.1.2.3\tfoo.remote\n",
		},
		"host network copies the host's file": {
			pod:       Pod{HostNetwork: true, Hostname: "p", Subdomain: "s", HostAliases: aliases[1:]},
			hostHosts: "127.0.0.1 localhost\n192.0.2.2 node1",
			want: "# Kubernetes-managed hosts file (host network).\n" +
				"127.0.0.1 localhost\n192.0.2.2 node1" +
				"\n# Entries added by HostAliases.\n" +
				"10.1.2.3\tfoo.remote\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := string(hostsFile(tc.pod, "10.88.0.5", "cluster.local", []byte(tc.hostHosts)))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("hosts file (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestParseResolvConf(t *testing.T) {
	tests := map[string]struct {
		in   string
		want resolvConf
	}{
		"empty": {in: "", want: resolvConf{}},
		"full": {
			in: "# generated\n; comment\nnameserver 10.0.0.1\nsearch a.example. b.example\nnameserver 127.0.0.53\n" +
				"search c.example\noptions ndots:2 edns0\nnameserver\ndomain x\n",
			want: resolvConf{
				Nameservers: []string{"10.0.0.1", "127.0.0.53"},
				Searches:    []string{"c.example"},
				Options:     []string{"ndots:2", "edns0"},
			},
		},
		"trailing dots go": {
			in:   "search a.example. b.example.\n",
			want: resolvConf{Searches: []string{"a.example", "b.example"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, parseResolvConf([]byte(tc.in))); diff != "" {
				t.Errorf("parseResolvConf (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPodResolvConf(t *testing.T) {
	host := resolvConf{
		Nameservers: []string{"127.0.0.53", "10.255.255.53", "::1"},
		Searches:    []string{"corp.example"},
		Options:     []string{"ndots:2", "edns0"},
	}
	five, two := "5", "2"
	cluster := clusterDNS{server: "10.88.0.1", domain: "cluster.local"}
	clusterSearch := []string{"team.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}
	tests := map[string]struct {
		pod     Pod
		cluster clusterDNS
		want    resolvConf
	}{
		"ClusterFirst: the cluster DNS, its search path then the host's, ndots:5": {
			pod:     Pod{Namespace: "team", DNSPolicy: corev1.DNSClusterFirst},
			cluster: cluster,
			want:    resolvConf{Nameservers: []string{"10.88.0.1"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		},
		"unset policy is ClusterFirst": {
			pod:     Pod{Namespace: "team"},
			cluster: cluster,
			want:    resolvConf{Nameservers: []string{"10.88.0.1"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		},
		"ClusterFirst on the host network falls back to Default": {
			pod:     Pod{Namespace: "team", HostNetwork: true},
			cluster: cluster,
			want:    host,
		},
		"ClusterFirstWithHostNet on the host network": {
			pod:     Pod{Namespace: "team", HostNetwork: true, DNSPolicy: corev1.DNSClusterFirstWithHostNet},
			cluster: cluster,
			want:    resolvConf{Nameservers: []string{"10.88.0.1"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
		},
		"Default with cluster DNS is the host's, minus loopback": {
			pod:     Pod{Namespace: "team", DNSPolicy: corev1.DNSDefault},
			cluster: cluster,
			want:    resolvConf{Nameservers: []string{"10.255.255.53"}, Searches: []string{"corp.example"}, Options: []string{"ndots:2", "edns0"}},
		},
		"ClusterFirst with dnsConfig": {
			pod: Pod{Namespace: "team", DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"},
				Searches: []string{"svc.cluster.local", "extra.example"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}}}},
			cluster: cluster,
			want: resolvConf{Nameservers: []string{"10.88.0.1", "1.1.1.1"}, Searches: append(clusterSearch, "extra.example"),
				Options: []string{"ndots:2"}},
		},
		"ClusterFirst without cluster DNS is the host's, minus loopback": {
			pod:  Pod{DNSPolicy: corev1.DNSClusterFirst},
			want: resolvConf{Nameservers: []string{"10.255.255.53"}, Searches: []string{"corp.example"}, Options: []string{"ndots:2", "edns0"}},
		},
		"unset policy without cluster DNS": {
			pod:  Pod{},
			want: resolvConf{Nameservers: []string{"10.255.255.53"}, Searches: []string{"corp.example"}, Options: []string{"ndots:2", "edns0"}},
		},
		"Default": {
			pod:  Pod{DNSPolicy: corev1.DNSDefault},
			want: resolvConf{Nameservers: []string{"10.255.255.53"}, Searches: []string{"corp.example"}, Options: []string{"ndots:2", "edns0"}},
		},
		"host network keeps loopback servers": {
			pod:  Pod{HostNetwork: true, DNSPolicy: corev1.DNSClusterFirstWithHostNet},
			want: host,
		},
		"None takes dnsConfig only": {
			pod: Pod{DNSPolicy: corev1.DNSNone, DNSConfig: &corev1.PodDNSConfig{
				Nameservers: []string{"1.2.3.4"},
				Searches:    []string{"ns1.svc.cluster-domain.example"},
				Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: &five}, {Name: "edns0"}},
			}},
			want: resolvConf{Nameservers: []string{"1.2.3.4"}, Searches: []string{"ns1.svc.cluster-domain.example"}, Options: []string{"ndots:5", "edns0"}},
		},
		"dnsConfig merges: new servers and searches appended, options overridden": {
			pod: Pod{DNSConfig: &corev1.PodDNSConfig{
				Nameservers: []string{"10.255.255.53", "1.1.1.1"},
				Searches:    []string{"corp.example", "more.example"},
				Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: &five}, {Name: "rotate"}},
			}},
			want: resolvConf{
				Nameservers: []string{"10.255.255.53", "1.1.1.1"},
				Searches:    []string{"corp.example", "more.example"},
				Options:     []string{"ndots:5", "edns0", "rotate"},
			},
		},
		"at most three nameservers": {
			pod: Pod{DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3"}}},
			want: resolvConf{
				Nameservers: []string{"10.255.255.53", "1.1.1.1", "2.2.2.2"},
				Searches:    []string{"corp.example"},
				Options:     []string{"ndots:2", "edns0"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, podResolvConf(tc.pod, host, tc.cluster)); diff != "" {
				t.Errorf("podResolvConf (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestResolvConfBytes(t *testing.T) {
	tests := map[string]struct {
		in   resolvConf
		want string
	}{
		"empty":        {in: resolvConf{}, want: ""},
		"servers only": {in: resolvConf{Nameservers: []string{"10.0.0.1", "10.0.0.2"}}, want: "nameserver 10.0.0.1\nnameserver 10.0.0.2\n"},
		"everything": {
			in:   resolvConf{Nameservers: []string{"10.0.0.1"}, Searches: []string{"a", "b"}, Options: []string{"ndots:5", "edns0"}},
			want: "search a b\nnameserver 10.0.0.1\noptions ndots:5 edns0\n",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, string(tc.in.bytes())); diff != "" {
				t.Errorf("bytes (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestHostResolvConf(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	stub := write("stub", "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch corp.example\n")
	real := write("real", "nameserver 10.0.0.1\nnameserver 10.0.0.2\nsearch corp.example\n")
	mixed := write("mixed", "nameserver 127.0.0.1\nnameserver 10.0.0.9\n")
	tests := map[string]struct {
		path, upstream string
		want           resolvConf
	}{
		"stub only: the upstream list": {
			path: stub, upstream: real,
			want: resolvConf{Nameservers: []string{"10.0.0.1", "10.0.0.2"}, Searches: []string{"corp.example"}},
		},
		"stub only, no upstream file": {
			path: stub, upstream: filepath.Join(dir, "missing"),
			want: resolvConf{Nameservers: []string{"127.0.0.53"}, Searches: []string{"corp.example"}, Options: []string{"edns0", "trust-ad"}},
		},
		"a real server: kept as it is": {
			path: mixed, upstream: real,
			want: resolvConf{Nameservers: []string{"127.0.0.1", "10.0.0.9"}},
		},
		"no upstream asked": {
			path: stub,
			want: resolvConf{Nameservers: []string{"127.0.0.53"}, Searches: []string{"corp.example"}, Options: []string{"edns0", "trust-ad"}},
		},
		"missing file: empty": {
			path: filepath.Join(dir, "missing"), upstream: real,
			want: resolvConf{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := hostResolvConf(tc.path, tc.upstream)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("hostResolvConf (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestGatewayIP(t *testing.T) {
	for subnet, want := range map[string]string{"10.88.0.0/16": "10.88.0.1", "10.200.7.0/24": "10.200.7.1", "10.1.255.0/24": "10.1.255.1"} {
		if got, err := GatewayIP(subnet); err != nil || got != want {
			t.Errorf("GatewayIP(%s) = %q, %v; want %s", subnet, got, err, want)
		}
	}
	if _, err := GatewayIP("fd00::/64"); err == nil {
		t.Errorf("GatewayIP of an IPv6 subnet: no error")
	}
}

// TestKernelHostname: setHostnameAsFQDN gives the FQDN only to a pod with
// a subdomain, and refuses one over the kernel's 64 characters with the
// kubelet's message.
func TestKernelHostname(t *testing.T) {
	long := strings.Repeat("h", 39)
	tests := map[string]struct {
		pod     Pod
		want    string
		wantErr string
	}{
		"the pod's hostname": {pod: Pod{Namespace: "ns1", Hostname: "web-0", Subdomain: "web"}, want: "web-0"},
		"FQDN": {pod: Pod{Namespace: "ns1", Hostname: "web-0", Subdomain: "web", SetHostnameAsFQDN: true},
			want: "web-0.web.ns1.svc.cluster.local"},
		"no subdomain, no FQDN": {pod: Pod{Namespace: "ns1", Hostname: "web-0", SetHostnameAsFQDN: true}, want: "web-0"},
		"64 characters fit": {pod: Pod{Namespace: "n", Hostname: long, Subdomain: "abcd", SetHostnameAsFQDN: true},
			want: long + ".abcd.n.svc.cluster.local"},
		"65 do not": {pod: Pod{Namespace: "n", Hostname: long, Subdomain: "abcde", SetHostnameAsFQDN: true},
			wantErr: "failed to construct FQDN from pod hostname and cluster domain, FQDN " + long +
				".abcde.n.svc.cluster.local is too long (64 characters is the max, 65 characters requested)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.pod.kernelHostname("cluster.local")
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("kernelHostname = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
