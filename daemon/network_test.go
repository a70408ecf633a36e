//go:build integration

package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/network/nettest"
)

// TestPodNetwork drives the pod network through one skiffd, checking what
// a pod gets that it would not get on the host's network: its own address
// in --pod-subnet, its own ports, its own loopback.
func TestPodNetwork(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	node := nodeIP(t, s)
	_, subnet, err := net.ParseCIDR(s.subnet)
	if err != nil {
		t.Fatal(err)
	}
	// Two web servers on the same port side by side, each answering its
	// name: on the host's network the second could not bind.
	a := runWeb(t, s, "web-a", 0)
	b := runWeb(t, s, "web-b", 0)

	t.Run("own addresses", func(t *testing.T) {
		for _, p := range []*corev1.Pod{a, b} {
			ip := net.ParseIP(p.Status.PodIP)
			if ip == nil || !subnet.Contains(ip) {
				t.Errorf("%s: podIP %q is not in --pod-subnet %s", p.Name, p.Status.PodIP, s.subnet)
			}
			if hostHasAddress(t, p.Status.PodIP) {
				t.Errorf("%s: podIP %s is an address of the host", p.Name, p.Status.PodIP)
			}
			if len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != p.Status.PodIP {
				t.Errorf("%s: podIPs %v, want [%s]", p.Name, p.Status.PodIPs, p.Status.PodIP)
			}
			if p.Status.HostIP != node {
				t.Errorf("%s: hostIP %q, want the node's %s", p.Name, p.Status.HostIP, node)
			}
		}
		if a.Status.PodIP == b.Status.PodIP {
			t.Errorf("both pods have the IP %s", a.Status.PodIP)
		}
	})

	t.Run("the host reaches pods", func(t *testing.T) {
		for _, p := range []*corev1.Pod{a, b} {
			if got := httpGet(t, fmt.Sprintf("http://%s:8080/", p.Status.PodIP)); got != p.Name {
				t.Errorf("GET %s:8080 answered %q, want %q", p.Status.PodIP, got, p.Name)
			}
		}
	})

	t.Run("a pod reaches another by podIP", func(t *testing.T) {
		script := fmt.Sprintf("timeout 10 wget -q -O- http://%s:8080/ && timeout 10 wget -q -O- http://%s:8080/", a.Status.PodIP, b.Status.PodIP)
		if log := runToEnd(t, s, shPod("pod-to-pod", corev1.RestartPolicyNever, script), corev1.PodSucceeded); log != "web-a\nweb-b\n" {
			t.Errorf("pod to pod said %q", log)
		}
	})

	t.Run("its own loopback", func(t *testing.T) {
		// web-a listens on 8080 on every address: on the host's network
		// this pod's 127.0.0.1:8080 would be web-a's (or refuse, lo down).
		script := "mkdir -p /tmp/www && echo mine > /tmp/www/index.html && (httpd -f -p 127.0.0.1:8080 -h /tmp/www &) && sleep 1 && timeout 10 wget -q -O- http://127.0.0.1:8080/"
		if log := runToEnd(t, s, shPod("own-lo", corev1.RestartPolicyNever, script), corev1.PodSucceeded); log != "mine\n" {
			t.Errorf("the pod's 127.0.0.1:8080 answered %q", log)
		}
	})

	t.Run("hostPort from the node IP and 127.0.0.1", func(t *testing.T) {
		port := freePort(t)
		runWeb(t, s, "web-hostport", port)
		for _, host := range []string{node, "127.0.0.1"} {
			url := fmt.Sprintf("http://%s:%d/", host, port)
			if got := httpGet(t, url); got != "web-hostport" {
				t.Errorf("GET %s answered %q", url, got)
			}
		}
	})

	t.Run("hostNetwork pods keep the node's IP", func(t *testing.T) {
		pod := shPod("host-net", corev1.RestartPolicyNever, "cat /etc/hosts")
		pod.Spec.HostNetwork = true
		log := runToEnd(t, s, pod, corev1.PodSucceeded)
		got, err := s.client.CoreV1().Pods("default").Get(context.Background(), "host-net", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.PodIP != node {
			t.Errorf("podIP %q, want the node's %s", got.Status.PodIP, node)
		}
		hosts, err := os.ReadFile("/etc/hosts")
		if err != nil {
			t.Fatal(err)
		}
		if want := "# Kubernetes-managed hosts file (host network).\n" + string(hosts); log != want {
			t.Errorf("/etc/hosts of a hostNetwork pod:\n%s\nwant:\n%s", log, want)
		}
	})

	t.Run("/etc/hosts and /etc/resolv.conf as the kubelet writes them", func(t *testing.T) {
		testEtcFiles(t, s)
	})

	t.Run("setHostnameAsFQDN", func(t *testing.T) {
		testHostnameAsFQDN(t, s)
	})

	t.Run("masquerade off the node", func(t *testing.T) {
		testMasquerade(t, s)
	})

	t.Run("the node's own address", func(t *testing.T) {
		// NOTE: traffic to the node itself is delivered, not forwarded: it
		// is not masqueraded (neither is it on a kubelet's node), and the
		// node sees the pod's own address.
		ln, err := net.Listen("tcp", net.JoinHostPort(node, "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		seen := acceptOne(ln)
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		runToEnd(t, s, shPod("to-node", corev1.RestartPolicyNever, fmt.Sprintf("echo hi | nc -w 10 %s %s", node, port)), corev1.PodSucceeded)
		pod, err := s.client.CoreV1().Pods("default").Get(context.Background(), "to-node", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if from := <-seen; from != pod.Status.PodIP {
			t.Errorf("the node saw the connection come from %s, want the pod's %s", from, pod.Status.PodIP)
		}
	})

	t.Run("no way to skiffd's local endpoints", func(t *testing.T) {
		testNoWayToSkiffd(t, s)
	})
}

// runWeb runs a pod serving its own name over HTTP on port 8080 (and on
// the node's hostPort, if not 0), and waits until it runs.
func runWeb(t *testing.T, s *skiffd, name string, hostPort int32) *corev1.Pod {
	t.Helper()
	pod := shPod(name, corev1.RestartPolicyNever, fmt.Sprintf("mkdir -p /tmp/www && echo %s > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www", name))
	if hostPort != 0 {
		pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: hostPort}}
	}
	if _, err := s.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return waitPodRunning(t, s, name)
}

// waitPodRunning waits until the pod's containers all run, failing at once
// if it ends instead.
func waitPodRunning(t *testing.T, s *skiffd, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, 2*time.Minute, "pod "+name+" running", func() (bool, error) {
		p, err := s.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("pod %s ended (%s): %+v", name, p.Status.Phase, p.Status.ContainerStatuses)
		}
		return p.Status.Phase == corev1.PodRunning, nil
	})
	return pod
}

// runToEnd creates the pod, waits until it ends in the phase want and
// returns its first container's log.
func runToEnd(t *testing.T, s *skiffd, pod *corev1.Pod, want corev1.PodPhase) string {
	t.Helper()
	if _, err := s.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, s.client, pod.Name, 2*time.Minute, "ended", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	log := readLog(t, s, pod.Name, &corev1.PodLogOptions{})
	if got.Status.Phase != want {
		t.Fatalf("pod %s ended %s, want %s; its log:\n%s", pod.Name, got.Status.Phase, want, log)
	}
	return log
}

// nodeIP is the node's InternalIP as skiffd reports it.
func nodeIP(t *testing.T, s *skiffd) string {
	t.Helper()
	nodes, err := s.client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				if a.Address == "127.0.0.1" || !hostHasAddress(t, a.Address) {
					t.Fatalf("node InternalIP %s is no usable address of this host", a.Address)
				}
				return a.Address
			}
		}
	}
	t.Fatalf("no node with an InternalIP: %+v", nodes.Items)
	return ""
}

// hostHasAddress reports whether an interface of the host (in its own
// network namespace) has the address ip.
func hostHasAddress(t *testing.T, ip string) bool {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.String() == ip {
			return true
		}
	}
	return false
}

// freePort is a TCP port no one listens on now.
func freePort(t *testing.T) int32 {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return int32(ln.Addr().(*net.TCPAddr).Port)
}

// httpGet fetches url until it answers (the server may be starting) and
// returns the body without its last newline.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	var body []byte
	waitFor(t, time.Minute, "GET "+url, func() (bool, error) {
		resp, err := client.Get(url)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return err == nil, nil
	})
	return strings.TrimSuffix(string(body), "\n")
}

// acceptOne accepts one connection on ln and sends the address it came
// from ("" if none came within two minutes).
func acceptOne(ln net.Listener) <-chan string {
	from := make(chan string, 1)
	go func() {
		if tl, ok := ln.(*net.TCPListener); ok {
			tl.SetDeadline(time.Now().Add(2 * time.Minute))
		}
		c, err := ln.Accept()
		if err != nil {
			from <- ""
			return
		}
		defer c.Close()
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		from <- host
	}()
	return from
}

// testEtcFiles checks a pod's /etc/hosts and /etc/resolv.conf against what
// the kubelet writes (managedHostsFileContent, the CRI's resolv.conf from
// the pod's DNS config).
func testEtcFiles(t *testing.T, s *skiffd) {
	pod := shPod("files", corev1.RestartPolicyNever, "cat /etc/hosts; echo ---; cat /etc/resolv.conf; echo ---; hostname")
	pod.Spec.Hostname = "files-0"
	pod.Spec.Subdomain = "peers"
	pod.Spec.HostAliases = []corev1.HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}}
	pod.Spec.DNSPolicy = corev1.DNSNone
	pod.Spec.DNSConfig = &corev1.PodDNSConfig{
		Nameservers: []string{"192.0.2.53"},
		Searches:    []string{"example.test"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "edns0"}},
	}
	log := runToEnd(t, s, pod, corev1.PodSucceeded)
	got, err := s.client.CoreV1().Pods("default").Get(context.Background(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip := got.Status.PodIP
	want := "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n" +
		ip + "\tfiles-0.peers.default.svc.cluster.local\tfiles-0\n" +
		"\n# Entries added by HostAliases.\n" +
		"10.1.2.3\tfoo.local\tbar.local\n" +
		"---\n" +
		"search example.test\n" +
		"nameserver 192.0.2.53\n" +
		"options ndots:2 edns0\n" +
		"---\n" +
		"files-0\n"
	if log != want {
		t.Errorf("in the pod:\n%s\nwant:\n%s", log, want)
	}

	// dnsPolicy Default: the node's resolver configuration.
	pod = shPod("files-default", corev1.RestartPolicyNever, "cat /etc/resolv.conf")
	pod.Spec.DNSPolicy = corev1.DNSDefault
	log = runToEnd(t, s, pod, corev1.PodSucceeded)
	if want := hostNameservers(t); nameserverLines(log) != want {
		t.Errorf("resolv.conf with dnsPolicy Default names %q, want the host's %q:\n%s", nameserverLines(log), want, log)
	}
}

// testHostnameAsFQDN: with setHostnameAsFQDN and a subdomain the kernel's
// hostname, /etc/hostname and HOSTNAME are the pod's FQDN, while /etc/hosts
// still names it both ways; an FQDN over 64 characters fails the pod's
// sandbox with the kubelet's event, and the pod waits in ContainerCreating.
func testHostnameAsFQDN(t *testing.T, s *skiffd) {
	pod := shPod("fqdn", corev1.RestartPolicyNever, "hostname; cat /etc/hostname; echo $HOSTNAME; grep fqdn-0 /etc/hosts | cut -f2-")
	pod.Spec.Hostname = "fqdn-0"
	pod.Spec.Subdomain = "peers"
	pod.Spec.SetHostnameAsFQDN = ptr(true)
	const fqdn = "fqdn-0.peers.default.svc.cluster.local"
	log := runToEnd(t, s, pod, corev1.PodSucceeded)
	if want := strings.Repeat(fqdn+"\n", 3) + fqdn + "\tfqdn-0\n"; log != want {
		t.Errorf("in the pod:\n%s\nwant:\n%s", log, want)
	}

	long := shPod("fqdn-long", corev1.RestartPolicyNever, "true")
	long.Spec.Hostname = strings.Repeat("h", 30)
	long.Spec.Subdomain = "a-subdomain"
	long.Spec.SetHostnameAsFQDN = ptr(true)
	if _, err := s.client.CoreV1().Pods("default").Create(context.Background(), long, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	longFQDN := long.Spec.Hostname + ".a-subdomain.default.svc.cluster.local"
	waitEvent(t, s.client, long.Name, corev1.EventTypeWarning, "FailedCreatePodSandBox",
		"Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN "+longFQDN+
			" is too long (64 characters is the max, 68 characters requested)")
	got := waitPod(t, s.client, long.Name, time.Minute, "waiting", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil
	})
	if w := got.Status.ContainerStatuses[0].State.Waiting; w.Reason != "ContainerCreating" || got.Status.Phase != corev1.PodPending {
		t.Errorf("pod %s, container waiting %+v; want Pending in ContainerCreating", got.Status.Phase, w)
	}
	if err := s.client.CoreV1().Pods("default").Delete(context.Background(), long.Name, metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
}

// hostNameservers are the host's nameserver lines, without the loopback
// ones (a stub resolver on the host is no server inside a pod).
func hostNameservers(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	return nameserverLines(string(b))
}

func nameserverLines(conf string) string {
	var out []string
	for _, line := range strings.Split(conf, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "nameserver" && !strings.HasPrefix(f[1], "127.") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// testMasquerade sets up a stand-in for a machine off the node (a network
// namespace behind a veth pair, routed by the host) and checks that a pod
// reaches it and that it sees the node's address, not the pod's.
func testMasquerade(t *testing.T, s *skiffd) {
	outside := nettest.Reserve(t) // its /24 for the link; its name for the namespace and veth
	hostAddr := outside.Gateway()
	farAddr := strings.TrimSuffix(hostAddr, ".1") + ".2"
	name := outside.Bridge
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", name).Run()
	})
	for _, args := range [][]string{
		{"netns", "add", name},
		{"link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", name},
		{"addr", "add", hostAddr + "/24", "dev", name},
		{"link", "set", name, "up"},
		{"-n", name, "addr", "add", farAddr + "/24", "dev", "eth0"},
		{"-n", name, "link", "set", "eth0", "up"},
		// A way back to the pods without masquerading, so that only the
		// source address tells.
		{"-n", name, "route", "add", "default", "via", hostAddr},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	far, err := ns.GetNS(filepath.Join("/run/netns", name))
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	var ln net.Listener
	if err := far.Do(func(ns.NetNS) error {
		var err error
		ln, err = net.Listen("tcp", farAddr+":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := acceptOne(ln)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	runToEnd(t, s, shPod("to-outside", corev1.RestartPolicyNever, fmt.Sprintf("echo hi | nc -w 10 %s %s", farAddr, port)), corev1.PodSucceeded)
	if from := <-seen; from != hostAddr {
		t.Errorf("off the node, the pod's connection came from %q, want the node's address %s on that link", from, hostAddr)
	}
}

// testNoWayToSkiffd checks that a pod cannot reach skiffd's API on
// 127.0.0.1, neither as its own loopback, nor on the bridge's address,
// nor by routing 127.0.0.1 to the node (CVE-2020-8558: the bridge accepts
// loopback destinations once portmap has set route_localnet on it).
func testNoWayToSkiffd(t *testing.T, s *skiffd) {
	_, port, _ := net.SplitHostPort(s.addr)
	// A plain HTTP request, which skiffd's TLS listener answers with Go's
	// 400 (busybox's wget cannot agree a TLS handshake with Go's server).
	const request, answer = `GET /version HTTP/1.0\r\n\r\n`, "Client sent an HTTP request to an HTTPS server"
	get := func(host string) string {
		return fmt.Sprintf("printf '%s' | timeout 5 nc %s %s", request, host, port)
	}
	// The same command from the host's network reaches skiffd.
	control := shPod("api-control", corev1.RestartPolicyNever, get("127.0.0.1"))
	control.Spec.HostNetwork = true
	if log := runToEnd(t, s, control, corev1.PodSucceeded); !strings.Contains(log, answer) {
		t.Fatalf("a hostNetwork pod got %q from skiffd's listener", log)
	}
	// NOTE: the node's address on the pod network does reach the API now,
	// as pods reach kube-apiserver (the kubernetes Service): TLS and
	// authentication guard it there (TestServiceAccountsInPods). What a pod
	// must never reach is what listens on the node's loopback only.
	runToEnd(t, s, shPod("api-loopback", corev1.RestartPolicyNever, get("127.0.0.1")+"; test $? -ne 0"), corev1.PodSucceeded)

	// route_localnet is set on the bridge by now (the hostPort pod).
	if b, err := os.ReadFile(filepath.Join("/proc/sys/net/ipv4/conf", s.bridge, "route_localnet")); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Fatalf("route_localnet of %s is %q (%v): the check below would prove nothing", s.bridge, b, err)
	}
	attacker := shPod("attacker", corev1.RestartPolicyNever, "exec sleep 3600")
	if _, err := s.client.CoreV1().Pods("default").Create(context.Background(), attacker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	attacker = waitPodRunning(t, s, "attacker")
	netns := podNetNS(t, s, attacker)
	// What a raw socket in the pod could send: packets for 127.0.0.1 out
	// of eth0 to the node (here made with the routing table of the pod's
	// namespace, as the test has the capabilities for it).
	setup := fmt.Sprintf(`set -e
sysctl -qw net.ipv4.conf.eth0.route_localnet=1
ip route add 127.0.0.1/32 via %s dev eth0 table 99
ip rule add to 127.0.0.1/32 lookup 99 pref 10
ip rule del pref 0
ip rule add lookup local pref 100`, s.gateway)
	if out, err := exec.Command("nsenter", "--net="+netns, "sh", "-c", setup).CombinedOutput(); err != nil {
		t.Fatalf("routing 127.0.0.1 out of the pod: %v: %s", err, out)
	}
	attack := exec.Command("nsenter", "--net="+netns, "/bin/busybox", "timeout", "5", "/bin/busybox", "nc", "127.0.0.1", port)
	attack.Stdin = strings.NewReader(strings.ReplaceAll(request, `\r\n`, "\r\n"))
	out, err := attack.CombinedOutput()
	if err == nil || strings.Contains(string(out), answer) {
		t.Errorf("a pod reached skiffd's API on the node's 127.0.0.1:%s through the bridge: %s", port, out)
	}
}

// podNetNS is the network namespace of a running pod, as skiffd mounts it.
func podNetNS(t *testing.T, s *skiffd, pod *corev1.Pod) string {
	t.Helper()
	record, err := os.ReadFile(filepath.Join(s.dataDir, "network", "pods", string(pod.UID), "sandbox.json"))
	if err != nil {
		t.Fatalf("the sandbox record of pod %s: %v", pod.Name, err)
	}
	var sandbox struct {
		NetNS string `json:"netns"`
	}
	if err := json.Unmarshal(record, &sandbox); err != nil || sandbox.NetNS == "" {
		t.Fatalf("the sandbox record of pod %s: %s (%v)", pod.Name, record, err)
	}
	if _, err := os.Stat(sandbox.NetNS); err != nil {
		t.Fatalf("network namespace of pod %s: %v", pod.Name, err)
	}
	return sandbox.NetNS
}

// TestPodNetworkNoLeaks runs 300 pods through a /24 (253 addresses) in a
// row, and then checks that nothing of their networks is left: host-local
// reservations, veths on the bridge, network namespaces (mounts and
// directories), CNI's cached results, iptables rules naming their IPs.
func TestPodNetworkNoLeaks(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	job := shJob("many", "", 300, 8, 0, corev1.RestartPolicyNever)
	job.Spec.Template.Spec.Containers[0].Command = []string{"true"}
	job, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, s.client, "default", job.Name, "Complete", 10*time.Minute)
	pods := jobPods(t, s.client, job)
	ips := map[string]bool{}
	for _, p := range pods {
		ips[p.Status.PodIP] = true
	}
	if len(pods) != 300 || len(ips) < 2 || ips[""] {
		t.Fatalf("%d pods with %d distinct IPs (%v)", len(pods), len(ips), ips[""])
	}
	bg := metav1.DeletePropagationBackground
	if err := s.client.BatchV1().Jobs("default").Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Minute, "the job's pods to be gone", func() (bool, error) {
		list, err := s.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, err
	})

	// The networks skiffd keeps made ahead for the next pods hold
	// addresses and veths too: a skiffd started without them removes them.
	s.stop()
	s.extra = append(s.extra, "--pod-network-pool", "0")
	s.start()
	netDir := filepath.Join(s.dataDir, "network")
	waitFor(t, time.Minute, "the networks made ahead to be removed", func() (bool, error) {
		return len(dirNames(t, filepath.Join(netDir, "netns"))) == 0 && len(dirNames(t, filepath.Join(netDir, "pods"))) == 0, nil
	})
	if left := dirNames(t, filepath.Join(netDir, "ipam", "skiff")); strings.Join(left, " ") != "last_reserved_ip.0 lock" {
		t.Errorf("host-local still holds %v", left)
	}
	if left := dirNames(t, filepath.Join("/sys/class/net", s.bridge, "brif")); len(left) != 0 {
		t.Errorf("veths left on %s: %v", s.bridge, left)
	}
	for _, dir := range []string{"netns", "pods"} {
		if left := dirNames(t, filepath.Join(netDir, dir)); len(left) != 0 {
			t.Errorf("%s left: %v", dir, left)
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), filepath.Join(netDir, "netns")) {
		t.Errorf("network namespaces still mounted under %s", netDir)
	}
	cached := dirNames(t, "/var/lib/cni/results")
	for _, p := range pods {
		for _, f := range cached {
			if strings.Contains(f, string(p.UID)) {
				t.Errorf("CNI result of pod %s left: %s", p.Name, f)
			}
		}
	}
	rules, err := exec.Command("iptables-save").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(rules), "\n") {
		for ip := range ips {
			if strings.Contains(line, ip+"/") || strings.Contains(line, ip+" ") {
				t.Errorf("iptables rule for pod IP %s left: %s", ip, line)
			}
		}
	}
}

// dirNames lists a directory's entries (none if it does not exist).
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestPodNetworkSurvivesKill: after kill -9 of skiffd a running pod keeps
// its network namespace (one made ahead of it, --pod-network-pool) and IP
// and stays reachable, while skiffd is down and after it is back; what a
// crash left of another pod's network (a namespace, an address, a veth,
// with no pod for it) and the networks made ahead that no pod took are
// removed when skiffd starts again.
func TestPodNetworkSurvivesKill(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--pod-network-pool", "2")
	s.start()
	// NOTE: the pool fills beside the start; a pod that comes first is
	// attached on its own (on a loaded machine, CI's, it did).
	waitFor(t, time.Minute, "two networks made ahead", func() (bool, error) {
		return len(pooledSandboxes(s.dataDir)) == 2, nil
	})
	web := runWeb(t, s, "survivor", 0)
	url := fmt.Sprintf("http://%s:8080/", web.Status.PodIP)
	if got := httpGet(t, url); got != "survivor" {
		t.Fatalf("GET %s answered %q", url, got)
	}
	netns := podNetNS(t, s, web)
	if made := filepath.Base(filepath.Dir(netns)); !strings.HasPrefix(made, "pool-") {
		t.Errorf("the survivor's network namespace %s was not made ahead", netns)
	}
	waitFor(t, time.Minute, "two networks made ahead again", func() (bool, error) {
		return len(pooledSandboxes(s.dataDir)) == 2, nil
	})

	s.kill()
	if got := httpGet(t, url); got != "survivor" {
		t.Errorf("with skiffd killed, GET %s answered %q", url, got)
	}
	// A crash in the middle of setting up a pod's network that was deleted
	// meanwhile: made here with skiffd's own package on its data dir.
	leftover := crashLeftover(t, s)

	s.extra = append(s.extra, "--pod-network-pool", "0")
	s.start()
	waitFor(t, time.Minute, "the leftover network to be removed", func() (bool, error) {
		_, err := os.Stat(leftover.netns)
		_, errRecord := os.Stat(filepath.Join(s.dataDir, "network", "pods", leftover.uid))
		return os.IsNotExist(err) && os.IsNotExist(errRecord), nil
	})
	if _, err := os.Stat(filepath.Join(s.dataDir, "network", "ipam", "skiff", leftover.ip)); !os.IsNotExist(err) {
		t.Errorf("the leftover's address %s is still reserved (%v)", leftover.ip, err)
	}
	waitFor(t, time.Minute, "the networks made ahead and not taken to be removed", func() (bool, error) {
		var left []string
		for _, dir := range []string{"netns", "pods"} {
			for _, name := range dirNames(t, filepath.Join(s.dataDir, "network", dir)) {
				if name != string(web.UID) && name != filepath.Base(filepath.Dir(netns)) {
					left = append(left, dir+"/"+name)
				}
			}
		}
		return len(left) == 0, nil
	})
	if veths := dirNames(t, filepath.Join("/sys/class/net", s.bridge, "brif")); len(veths) != 1 {
		t.Errorf("veths on the bridge once the untaken networks are gone: %v, want the survivor's alone", veths)
	}
	again := waitPodRunning(t, s, "survivor")
	if again.Status.PodIP != web.Status.PodIP {
		t.Errorf("podIP after the restart %s, want %s", again.Status.PodIP, web.Status.PodIP)
	}
	if got := podNetNS(t, s, again); got != netns {
		t.Errorf("network namespace after the restart %s, want %s", got, netns)
	}
	if got := httpGet(t, url); got != "survivor" {
		t.Errorf("after the restart, GET %s answered %q", url, got)
	}
	if cs := again.Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount != 0 || cs[0].State.Running == nil {
		t.Errorf("the survivor's container after the restart: %+v", cs)
	}
}

// leftoverNet is what crashLeftover left.
type leftoverNet struct {
	uid, netns, ip string
}

// crashLeftover sets up a pod network for a pod skiffd never heard of, on
// skiffd's data dir, and removes its sandbox.json as a crash before the
// end of Setup would.
func crashLeftover(t *testing.T, s *skiffd) leftoverNet {
	t.Helper()
	n, err := network.New(network.Config{DataDir: filepath.Join(s.dataDir, "network"), Subnet: s.subnet, Bridge: s.bridge})
	if err != nil {
		t.Fatal(err)
	}
	uid := "0c7a5b1e-0000-4000-8000-000000000001"
	sb, err := n.Setup(context.Background(), network.Pod{UID: uid, Namespace: "default", Name: "gone", Hostname: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(s.dataDir, "network", "pods", uid, "sandbox.json")); err != nil {
		t.Fatal(err)
	}
	return leftoverNet{uid: uid, netns: sb.NetNSPath, ip: sb.IP}
}

// TestPodNetworkUnavailable: without the CNI plugins skiffd says so at
// start in one line, and pods without hostNetwork wait in
// ContainerCreating with the error and a FailedCreatePodSandBox event,
// never on the host's network; once the plugins are there, they run.
func TestPodNetworkUnavailable(t *testing.T) {
	t.Parallel()
	plugins := t.TempDir()
	s := newSkiffd(t, "--cni-bin-dir", plugins)
	s.start()
	log, err := os.ReadFile(filepath.Join(s.dataDir, "skiffd.log"))
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(line, "pod network unavailable") {
			said = append(said, line)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "level=error") || !strings.Contains(said[0], `CNI plugin \"bridge\" not found in `+plugins) ||
		!strings.Contains(said[0], "install containernetworking-plugins") || !strings.Contains(said[0], "wait in ContainerCreating") {
		t.Errorf("at start skiffd said:\n%s", strings.Join(said, "\n"))
	}

	ctx := context.Background()
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, shPod("waits", corev1.RestartPolicyNever, "exec sleep 3600"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const prefix = "Failed to create pod sandbox: pod network unavailable: CNI plugin"
	pod := waitPod(t, s.client, "waits", time.Minute, "waiting on its network", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && strings.HasPrefix(cs[0].State.Waiting.Message, prefix)
	})
	if w := pod.Status.ContainerStatuses[0].State.Waiting; w.Reason != "ContainerCreating" || pod.Status.Phase != corev1.PodPending || pod.Status.PodIP != "" {
		t.Errorf("waiting pod: phase %s, podIP %q, waiting %+v", pod.Status.Phase, pod.Status.PodIP, w)
	}
	waitFor(t, time.Minute, "a FailedCreatePodSandBox event", func() (bool, error) {
		events, err := s.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=waits"})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreatePodSandBox" {
				if e.Type != corev1.EventTypeWarning || e.Source.Component != "kubelet" || !strings.HasPrefix(e.Message, prefix) {
					return false, fmt.Errorf("event %+v", e)
				}
				return true, nil
			}
		}
		return false, nil
	})

	// hostNetwork pods need no pod network.
	hostNet := shPod("host-net", corev1.RestartPolicyNever, "true")
	hostNet.Spec.HostNetwork = true
	runToEnd(t, s, hostNet, corev1.PodSucceeded)

	for _, p := range []string{"bridge", "host-local", "portmap"} {
		if err := os.Symlink(filepath.Join("/usr/lib/cni", p), filepath.Join(plugins, p)); err != nil {
			t.Fatal(err)
		}
	}
	pod = waitPodRunning(t, s, "waits")
	_, subnet, _ := net.ParseCIDR(s.subnet)
	if ip := net.ParseIP(pod.Status.PodIP); ip == nil || !subnet.Contains(ip) {
		t.Errorf("podIP %q once the plugins are there, want one in %s", pod.Status.PodIP, s.subnet)
	}
}

// TestPodNetworkSubnetOverlap: a --pod-subnet that a route of the host
// covers is refused at start, skiffd exiting non-zero with what to do.
func TestPodNetworkSubnetOverlap(t *testing.T) {
	t.Parallel()
	reserved := nettest.Reserve(t)
	node := hostRoute(t)
	dir := t.TempDir()
	_, stderr, err := runSkiffd("--data-dir", dir, "--containerd-address", containerd.Address,
		"--containerd-namespace", "skiff-overlap", "--listen", freeAddr(t), "--socket", filepath.Join(dir, "s.sock"),
		"--pod-subnet", node, "--pod-bridge", reserved.Bridge)
	if err == nil {
		t.Fatalf("skiffd started with --pod-subnet %s, a route of the host; it said:\n%s", node, stderr)
	}
	if !strings.Contains(stderr, "skiffd: pod subnet "+node+" overlaps the host route "+node+" dev ") ||
		!strings.Contains(stderr, "choose a --pod-subnet") {
		t.Errorf("skiffd said:\n%s", stderr)
	}
}

// hostRoute is the network of the host's default-route interface, a route
// of the host (other than the default one).
func hostRoute(t *testing.T) string {
	t.Helper()
	ip, err := utilnet.ChooseHostInterface()
	if err != nil {
		t.Fatal(err)
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, iface := range ifaces {
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.Equal(ip) {
				return (&net.IPNet{IP: ip.Mask(ipnet.Mask), Mask: ipnet.Mask}).String()
			}
		}
	}
	t.Fatalf("no interface has %s", ip)
	return ""
}

// TestEndedPodsNetworkServesTheNext: an ended pod's network goes back to
// the pool and serves a later pod (the pods of a Job run one at a time come
// back to the same few addresses), except a network a pod could have
// changed: an address a NET_ADMIN pod added to its namespace is seen by no
// later pod.
func TestEndedPodsNetworkServesTheNext(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--pod-network-pool", "1")
	s.start()
	ctx := context.Background()
	run := func(job *batchv1.Job) []corev1.Pod {
		t.Helper()
		job, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, 3*time.Minute, "job "+job.Name+" to finish", func() (bool, error) {
			j, err := s.client.BatchV1().Jobs("default").Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range j.Status.Conditions {
				if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
					return false, fmt.Errorf("job %s failed: %s", job.Name, c.Message)
				}
				if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		return jobPods(t, s.client, job)
	}
	ips := func(pods []corev1.Pod) map[string]bool {
		seen := map[string]bool{}
		for _, p := range pods {
			seen[p.Status.PodIP] = true
		}
		return seen
	}

	admin := shJob("admin", "ip addr add 192.0.2.1/32 dev lo", 3, 1, 0, corev1.RestartPolicyNever)
	admin.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}},
	}
	if seen := ips(run(admin)); len(seen) != 3 {
		t.Errorf("the NET_ADMIN pods had the addresses %v, want three of their own", seen)
	}
	// NOTE: a pod that sees the address fails, and with it the Job.
	plain := run(shJob("plain", "! ip addr show lo | grep -q 192.0.2.1", 6, 1, 0, corev1.RestartPolicyNever))
	if seen := ips(plain); len(seen) >= len(plain) || seen[""] {
		t.Errorf("%d pods run one at a time had %d addresses (%v): their networks did not serve the next pods", len(plain), len(seen), seen)
	}
}

// TestPodNetworkRecycled: a pod's network made ahead goes back to the pool
// when the pod ends and nothing of it is left in the namespace, and is
// torn down when a TCP socket of the pod is left in TIME_WAIT (one made by
// kubectl exec inside the pod, so that both ends are the pod's).
func TestPodNetworkRecycled(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--pod-network-pool", "1")
	s.start()
	poolHas := func(n int) func() (bool, error) {
		return func() (bool, error) { return len(pooledSandboxes(s.dataDir)) == n, nil }
	}
	ended := func(pod *corev1.Pod) (netns, id string) {
		t.Helper()
		netns = podNetNS(t, s, pod)
		id = filepath.Base(filepath.Dir(netns))
		if !strings.HasPrefix(id, "pool-") {
			t.Fatalf("pod %s's network %s was not made ahead", pod.Name, netns)
		}
		waitFor(t, time.Minute, "the pool made again", poolHas(1))
		if err := s.client.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, time.Minute, "pod "+pod.Name+" gone and its network released", func() (bool, error) {
			_, err := s.client.CoreV1().Pods("default").Get(context.Background(), pod.Name, metav1.GetOptions{})
			_, record := os.Stat(filepath.Join(s.dataDir, "network", "pods", string(pod.UID)))
			return apierrors.IsNotFound(err) && os.IsNotExist(record), nil
		})
		return netns, id
	}
	waitFor(t, time.Minute, "a network made ahead", poolHas(1))

	quiet := runWeb(t, s, "quiet", 0)
	netns, id := ended(quiet)
	if !pooledSandboxes(s.dataDir)[id] {
		t.Errorf("the network of a pod that left nothing in it (%s) did not go back to the pool", id)
	}
	if _, err := os.Stat(netns); err != nil {
		t.Errorf("the recycled network namespace: %v", err)
	}

	busy := runWeb(t, s, "busy", 0)
	if out, err := s.kubectlCmd("", "exec", "busy", "--", "sh", "-c",
		`wget -q -O /dev/null http://127.0.0.1:8080/ && for i in $(seq 100); do grep -q " 06 " /proc/net/tcp /proc/net/tcp6 && exit 0; sleep 0.05; done; exit 1`).CombinedOutput(); err != nil {
		t.Fatalf("no socket in TIME_WAIT in the pod: %v\n%s", err, out)
	}
	netns, id = ended(busy)
	if pooledSandboxes(s.dataDir)[id] {
		t.Errorf("the network of a pod that left a socket in TIME_WAIT (%s) went back to the pool", id)
	}
	waitFor(t, time.Minute, "the used network namespace removed", func() (bool, error) {
		_, err := os.Stat(netns)
		return os.IsNotExist(err), nil
	})
}
