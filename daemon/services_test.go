//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/network"
)

// podLog is the whole log of the pod's first container.
func podLog(t testing.TB, c kubernetes.Interface, name string) string {
	t.Helper()
	rc, err := c.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).Stream(context.Background())
	if err != nil {
		return ""
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return string(b)
}

// dnsIP is the skiffd's cluster DNS address: its pod subnet's gateway.
func (s *skiffd) dnsIP(t testing.TB) string {
	t.Helper()
	ip, err := network.GatewayIP(s.subnet)
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// TestServiceIndexedJobPeers is Kubernetes' "Job with Pod-to-Pod
// Communication": an Indexed Job whose pods have subdomain "peers" and a
// headless Service "peers" selecting them; each pod finds the others as
// peers-<i>.peers and fetches their hostname over the pod network.
func TestServiceIndexedJobPeers(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	_, err := s.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "peers"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"batch.kubernetes.io/job-name": "peers"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 7000}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// NOTE: busybox-static 1.35's wget crashes with -T: timeout(1) bounds it
	// instead; its nslookup ignores the search path: it gets the full name.
	const script = `mkdir -p /www && hostname > /www/name && httpd -p 7000 -h /www
for i in 0 1 2; do
  until timeout 3 wget -q -O /tmp/got http://peers-$i.peers:7000/name; do sleep 0.2; done
  echo "reached peers-$i as $(cat /tmp/got)"
  nslookup peers-$i.peers.default.svc.cluster.local
done
echo all-reached
sleep 3600`
	job := shJob("peers", script, 3, 3, 0, corev1.RestartPolicyNever)
	job.Spec.CompletionMode = ptr(batchv1.IndexedCompletion)
	job.Spec.Template.Spec.Subdomain = "peers"
	job.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 7000}}
	created, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	waitFor(t, 3*time.Minute, "every pod reached its peers", func() (bool, error) {
		pods = jobPods(t, s.client, created)
		if len(pods) != 3 {
			return false, nil
		}
		for _, p := range pods {
			if !strings.Contains(podLog(t, s.client, p.Name), "all-reached") {
				return false, nil
			}
		}
		return true, nil
	})
	ips := map[string]string{}
	for _, p := range pods {
		ips[p.Spec.Hostname] = p.Status.PodIP
	}
	for _, p := range pods {
		log := podLog(t, s.client, p.Name)
		for i := 0; i < 3; i++ {
			peer := fmt.Sprintf("peers-%d", i)
			for _, want := range []string{
				fmt.Sprintf("reached %s as %s\n", peer, peer),
				fmt.Sprintf("Name:\t%s.peers.default.svc.cluster.local\nAddress: %s\n", peer, ips[peer]),
			} {
				if !strings.Contains(log, want) {
					t.Errorf("pod %s (%s) log lacks %q:\n%s", p.Name, p.Spec.Hostname, want, log)
				}
			}
		}
		if p.Status.PodIP == "" || p.Status.PodIP == p.Status.HostIP {
			t.Errorf("pod %s has IP %q, the node's is %q", p.Name, p.Status.PodIP, p.Status.HostIP)
		}
	}
	// The headless Service's name is every ready pod.
	resp := queryDNS(t, s.dnsIP(t), "peers.default.svc.cluster.local.", dns.TypeA)
	var got []string
	for _, rr := range resp.Answer {
		got = append(got, rr.(*dns.A).A.String())
	}
	slices.Sort(got)
	want := []string{ips["peers-0"], ips["peers-1"], ips["peers-2"]}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("peers.default.svc.cluster.local = %v, want the pods' IPs %v", got, want)
	}
}

func queryDNS(t testing.TB, server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Timeout: 5 * time.Second}
	resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, qtype), net.JoinHostPort(server, "53"))
	if err != nil {
		t.Fatalf("querying %s for %s: %v", server, name, err)
	}
	return resp
}

// webPod serves its name on the named port http (8080) and is ready while
// its control directory (a hostPath) holds the file "ready".
func webPod(name, ctl string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(1)),
			Volumes: []corev1.Volume{{Name: "ctl", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: ctl, Type: ptr(corev1.HostPathDirectoryOrCreate)}}}},
			Containers: []corev1.Container{{
				Name: "web", Image: "busybox:1.35",
				Command:      []string{"sh", "-c", "mkdir -p /www && hostname > /www/name && exec httpd -f -p 8080 -h /www"},
				Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				VolumeMounts: []corev1.VolumeMount{{Name: "ctl", MountPath: "/ctl"}},
				// NOTE: a generous timeout: on a loaded machine an exec probe
				// can take over the default second, and a timed-out probe
				// would take a pod out that the test expects ready.
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, TimeoutSeconds: 10, ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/ctl/ready"}}}},
			}},
		},
	}
}

// TestUDPServiceFollowsEndpoints: a UDP client that keeps one socket, as a
// resolver does, reaches the Service's pod though it began sending before
// the Service had rules, and its new pod once the old one went. The
// kernel's conntrack entry of its flow (never DNATed, then DNATed to the
// old pod) would live for as long as the client sends; skiffd deletes it
// when the endpoints change, as kube-proxy does. Without that, each of the
// two waits fails (checked).
func TestUDPServiceFollowsEndpoints(t *testing.T) {
	t.Parallel()
	bin := testdataProgram(t, "udpecho")
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	echoPod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "echo"}},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr(int64(0)),
				Volumes: []corev1.Volume{{Name: "bin", VolumeSource: corev1.VolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: bin}}}},
				Containers: []corev1.Container{{
					Name: "echo", Image: "busybox:1.35", Command: []string{"/opt/udpecho/udpecho", "9953"},
					VolumeMounts: []corev1.VolumeMount{{Name: "bin", MountPath: "/opt/udpecho", ReadOnly: true}},
				}},
			},
		}
	}
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, echoPod("echo-a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc, err := s.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "echo"},
			Ports: []corev1.ServicePort{{Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(9953)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	conn, err := net.ListenUDP("udp4", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dst := &net.UDPAddr{IP: net.ParseIP(svc.Spec.ClusterIP), Port: 53}
	answer := func() string {
		if _, err := conn.WriteTo([]byte("?"), dst); err != nil {
			return ""
		}
		buf := make([]byte, 512)
		conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			return ""
		}
		return string(buf[:n])
	}
	waitFor(t, 2*time.Minute, "echo-a answering the Service", func() (bool, error) { return answer() == "echo-a", nil })

	if err := s.client.CoreV1().Pods("default").Delete(ctx, "echo-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, echoPod("echo-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The same socket goes on sending meanwhile: its flow's entry never
	// times out by itself.
	waitFor(t, time.Minute, "echo-b answering the same socket", func() (bool, error) { return answer() == "echo-b", nil })
}

// readyAddresses are the ready IPs of the Service's Endpoints and of its
// EndpointSlices.
func readyAddresses(t testing.TB, c kubernetes.Interface, svc string) (endpoints, slices []string) {
	t.Helper()
	ctx := context.Background()
	if ep, err := c.CoreV1().Endpoints("default").Get(ctx, svc, metav1.GetOptions{}); err == nil {
		for _, ss := range ep.Subsets {
			for _, a := range ss.Addresses {
				endpoints = append(endpoints, a.IP)
			}
		}
	}
	list, err := c.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
				slices = append(slices, ep.Addresses...)
			}
		}
	}
	sortStrings(endpoints)
	sortStrings(slices)
	return endpoints, slices
}

func sortStrings(s []string) { slices.Sort(s) }

// waitReady waits until the Service's ready addresses are want.
func waitReady(t testing.TB, c kubernetes.Interface, svc string, want ...string) {
	t.Helper()
	want = slices.Clone(want) // sorted here, never the caller's (its order names the pods)
	sortStrings(want)
	waitFor(t, time.Minute, fmt.Sprintf("ready endpoints of %s = %v", svc, want), func() (bool, error) {
		ep, sl := readyAddresses(t, c, svc)
		return slices.Equal(ep, want) && slices.Equal(sl, want), nil
	})
}

// fetchNames GETs http://addr/name n times from the host and returns the
// names seen (an error if one failed).
func fetchNames(addr string, n int) (map[string]int, error) {
	seen := map[string]int{}
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < n; i++ {
		resp, err := client.Get("http://" + addr + "/name")
		if err != nil {
			return seen, err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		seen[strings.TrimSpace(string(b))]++
	}
	return seen, nil
}

// TestClusterIPService: a ClusterIP Service reaches its ready pods by name
// and by clusterIP, from a pod and from the host; its endpoints follow the
// pods' readiness; kubectl shows it; its rules outlive a killed skiffd.
func TestClusterIPService(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	ctlA, ctlB := t.TempDir(), t.TempDir()
	for _, dir := range []string{ctlA, ctlB} {
		if err := os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var ips []string
	for _, p := range []*corev1.Pod{webPod("web-a", ctlA), webPod("web-b", ctlB)} {
		if _, err := s.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := s.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-a", "web-b"} {
		p := waitPod(t, s.client, name, 2*time.Minute, "ready", func(p *corev1.Pod) bool {
			c := podCondition(p, corev1.PodReady)
			return c != nil && c.Status == corev1.ConditionTrue
		})
		ips = append(ips, p.Status.PodIP)
	}
	waitReady(t, s.client, "web", ips...)
	clusterIP := svc.Spec.ClusterIP

	// From the host, by clusterIP: both pods answer (random balancing).
	// NOTE: the rules follow the slices shortly after (as kube-proxy's do).
	waitFor(t, time.Minute, "both pods answering the clusterIP from the host", func() (bool, error) {
		seen, err := fetchNames(clusterIP+":80", 20)
		return err == nil && seen["web-a"] > 0 && seen["web-b"] > 0, nil
	})

	// ClientIP affinity: one client, one pod.
	sticky, err := s.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "sticky"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, SessionAffinity: corev1.ServiceAffinityClientIP,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitReady(t, s.client, "sticky", ips...)
	// NOTE: the rules follow the slices shortly after; once they answer,
	// every GET of the one client goes to one pod.
	waitFor(t, time.Minute, "20 GETs of a ClientIP-affine Service answered by one pod", func() (bool, error) {
		seen, err := fetchNames(sticky.Spec.ClusterIP+":80", 20)
		return err == nil && (seen["web-a"] == 20 || seen["web-b"] == 20), nil
	})

	// From a pod, by name and by clusterIP.
	client := shPod("client", corev1.RestartPolicyNever,
		`for i in 1 2 3 4 5 6 7 8 9 10; do timeout 3 wget -q -O - http://web/name; timeout 3 wget -q -O - http://`+clusterIP+`/name; done; cat /etc/resolv.conf`)
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, client, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.client, "client", 2*time.Minute, "finished", isFinished)
	log := podLog(t, s.client, "client")
	if strings.Count(log, "web-a")+strings.Count(log, "web-b") != 20 || !strings.Contains(log, "web-a") || !strings.Contains(log, "web-b") {
		t.Errorf("client pod's 20 GETs (by name and clusterIP) got:\n%s", log)
	}
	wantResolv := "search default.svc.cluster.local svc.cluster.local cluster.local"
	if !strings.Contains(log, wantResolv) || !strings.Contains(log, "nameserver "+s.dnsIP(t)+"\n") || !strings.Contains(log, "options ndots:5") {
		t.Errorf("client pod's resolv.conf:\n%s", log)
	}

	// A pod reaching itself through its Service (hairpin).
	out := s.kubectl(t, "exec", "web-a", "--", "sh", "-c", "for i in 1 2 3 4 5 6 7 8; do timeout 3 wget -q -O - http://web/name; done")
	if strings.Count(out, "web-") != 8 {
		t.Errorf("web-a through its own Service:\n%s", out)
	}

	// kubectl shows the Service, its Endpoints and slices (addresses in
	// order).
	byIP := slices.Clone(ips)
	sortStrings(byIP)
	out = s.kubectl(t, "get", "svc,endpoints,endpointslices", "-o", "wide")
	for _, want := range []string{
		"service/web   ClusterIP   " + clusterIP + "   <none>        80/TCP",
		"app=web",
		"endpoints/web   " + byIP[0], "endpointslice.discovery.k8s.io/web-", "IPv4          8080",
	} {
		if !strings.Contains(out, want) && !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("kubectl get svc,endpoints,endpointslices lacks %q:\n%s", want, out)
		}
	}
	out = s.kubectl(t, "describe", "service", "web")
	for _, want := range []string{"Selector:                 app=web", "Type:                     ClusterIP",
		"IP:                       " + clusterIP, "TargetPort:               http/TCP", "Endpoints:                " + byIP[0] + ":8080," + byIP[1] + ":8080"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl describe service lacks %q:\n%s", want, out)
		}
	}

	// web-b not ready: it leaves the ready endpoints and gets no traffic.
	if err := os.Remove(filepath.Join(ctlB, "ready")); err != nil {
		t.Fatal(err)
	}
	waitReady(t, s.client, "web", ips[0])
	ep, err := s.client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || len(ep.Subsets) != 1 || len(ep.Subsets[0].NotReadyAddresses) != 1 || ep.Subsets[0].NotReadyAddresses[0].IP != ips[1] {
		t.Errorf("endpoints with web-b not ready: %+v %v", ep, err)
	}
	waitFor(t, time.Minute, "only web-a answering", func() (bool, error) {
		seen, err := fetchNames(clusterIP+":80", 10)
		return err == nil && seen["web-a"] == 10, nil
	})

	// No ready endpoint: connections are refused at once, not left hanging.
	if err := os.Remove(filepath.Join(ctlA, "ready")); err != nil {
		t.Fatal(err)
	}
	waitReady(t, s.client, "web")
	waitFor(t, time.Minute, "connection refused", func() (bool, error) {
		start := time.Now()
		conn, err := net.DialTimeout("tcp", clusterIP+":80", 5*time.Second)
		if err == nil {
			conn.Close()
			return false, nil
		}
		if !strings.Contains(err.Error(), "refused") {
			return false, nil
		}
		if d := time.Since(start); d > 2*time.Second {
			return false, fmt.Errorf("refused after %s", d)
		}
		return true, nil
	})

	// Ready again, web-a is back.
	if err := os.WriteFile(filepath.Join(ctlA, "ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitReady(t, s.client, "web", ips[0])
	waitFor(t, time.Minute, "web-a answering again", func() (bool, error) {
		seen, err := fetchNames(clusterIP+":80", 3)
		return err == nil && seen["web-a"] == 3, nil
	})

	// Rules outlive skiffd: killed, the Service still answers; restarted,
	// its rules are rewritten and still answer.
	s.kill()
	if seen, err := fetchNames(clusterIP+":80", 5); err != nil || seen["web-a"] != 5 {
		t.Errorf("with skiffd killed: %v %v", seen, err)
	}
	s.start()
	if seen, err := fetchNames(clusterIP+":80", 5); err != nil || seen["web-a"] != 5 {
		t.Errorf("with skiffd restarted: %v %v", seen, err)
	}

	// Deleted, the Services' endpoints and rules go.
	for _, name := range []string{"web", "sticky"} {
		if err := s.client.CoreV1().Services("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, time.Minute, "endpoints and slices gone", func() (bool, error) {
		_, err := s.client.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
		// NOTE: the kubernetes Service's slice stays.
		list, lerr := s.client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + " in (web,sticky)"})
		return apierrors.IsNotFound(err) && lerr == nil && len(list.Items) == 0, nil
	})
	waitFor(t, time.Minute, "the Service's rules gone", func() (bool, error) {
		out, err := exec.Command("iptables-save").Output()
		return err == nil && !strings.Contains(string(out), clusterIP+"/32") && !strings.Contains(string(out), sticky.Spec.ClusterIP+"/32"), err
	})
}

// kubectl runs kubectl against the skiffd and returns its output.
func (s *skiffd) kubectl(t testing.TB, args ...string) string {
	t.Helper()
	cmd := s.kubectlCmd("", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// testUpstream serves "outside.example." (A 192.0.2.123) on a loopback
// address's port 53 and returns that address.
func testUpstream(t *testing.T) string {
	t.Helper()
	ip := fmt.Sprintf("127.53.%d.%d", os.Getpid()%250+1, skiffdCount.Load()%250+1)
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg).SetReply(req)
		if strings.EqualFold(req.Question[0].Name, "outside.example.") && req.Question[0].Qtype == dns.TypeA {
			rr, _ := dns.NewRR("outside.example. 60 IN A 192.0.2.123")
			m.Answer = []dns.RR{rr}
		} else if !strings.EqualFold(req.Question[0].Name, "outside.example.") {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	pc, err := net.ListenPacket("udp4", ip+":53")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: handler}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ip
}

// TestClusterDNS: names outside the cluster domain go to the upstream of
// --resolv-conf, unknown cluster names get NXDOMAIN at once, pods' DNS
// policies give the kubelet's resolv.conf.
func TestClusterDNS(t *testing.T) {
	t.Parallel()
	upstream := testUpstream(t)
	resolvConf := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("nameserver "+upstream+"\nsearch corp.example\noptions edns0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newSkiffd(t, "--resolv-conf", resolvConf, "--cluster-domain", "skiff.test")
	s.start()
	ctx := context.Background()
	const script = `nslookup outside.example; nslookup nope.default.svc.skiff.test; echo ---; cat /etc/resolv.conf`
	clusterFirst := shPod("cluster-first", corev1.RestartPolicyNever, script)
	defaultPolicy := shPod("default-policy", corev1.RestartPolicyNever, "cat /etc/resolv.conf")
	defaultPolicy.Spec.DNSPolicy = corev1.DNSDefault
	none := shPod("none-policy", corev1.RestartPolicyNever, "cat /etc/resolv.conf")
	none.Spec.DNSPolicy = corev1.DNSNone
	none.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.53"}, Searches: []string{"a.example"}}
	for _, p := range []*corev1.Pod{clusterFirst, defaultPolicy, none} {
		if _, err := s.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"cluster-first", "default-policy", "none-policy"} {
		waitPod(t, s.client, name, 2*time.Minute, "finished", isFinished)
	}
	log := podLog(t, s.client, "cluster-first")
	for _, want := range []string{
		"Name:\toutside.example\nAddress: 192.0.2.123",
		"** server can't find nope.default.svc.skiff.test: NXDOMAIN",
		"search default.svc.skiff.test svc.skiff.test skiff.test corp.example\nnameserver " + s.dnsIP(t) + "\noptions ndots:5\n",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("ClusterFirst pod's log lacks %q:\n%s", want, log)
		}
	}
	// NOTE: the upstream is on the host's loopback, which a pod cannot reach: dropped.
	if log := podLog(t, s.client, "default-policy"); log != "search corp.example\noptions edns0\n" {
		t.Errorf("Default pod's resolv.conf:\n%s", log)
	}
	if log := podLog(t, s.client, "none-policy"); log != "search a.example\nnameserver 192.0.2.53\n" {
		t.Errorf("None pod's resolv.conf:\n%s", log)
	}

	// From the host, straight to skiffd's DNS.
	server := s.dnsIP(t)
	start := time.Now()
	resp := queryDNS(t, server, "nope.default.svc.skiff.test.", dns.TypeA)
	if resp.Rcode != dns.RcodeNameError || time.Since(start) > time.Second {
		t.Errorf("unknown cluster name: %s after %s", dns.RcodeToString[resp.Rcode], time.Since(start))
	}
	resp = queryDNS(t, server, "outside.example.", dns.TypeA)
	if len(resp.Answer) != 1 || resp.Answer[0].(*dns.A).A.String() != "192.0.2.123" {
		t.Errorf("forwarded name: %v", resp)
	}
	resp = queryDNS(t, server, "absent.default.svc.skiff.test.", dns.TypeA)
	if resp.Rcode != dns.RcodeNameError || !resp.Authoritative {
		t.Errorf("a Service that does not exist: %v", resp)
	}
	// The API's Service, which skiffd publishes, has its name.
	resp = queryDNS(t, server, "kubernetes.default.svc.skiff.test.", dns.TypeA)
	if first := strings.TrimSuffix(s.serviceCIDR, "0/24") + "1"; len(resp.Answer) != 1 || resp.Answer[0].(*dns.A).A.String() != first {
		t.Errorf("kubernetes.default.svc: %v, want %s", resp, first)
	}
}

// TestClusterDNSBesideAHostDNS: a DNS server of the host's own that holds
// port 53 on every address (dnsmasq's default) does not keep skiffd from
// starting, nor its pods from resolving: the cluster DNS serves on another
// port, and pods and the host reach it at the gateway's port 53 all the
// same, over UDP and TCP; the host's server gets none of it.
//
// NOTE: not parallel: the port is the host's, and every other skiffd of
// the package binds its gateway's port 53 (the parallel tests wait).
func TestClusterDNSBesideAHostDNS(t *testing.T) {
	hostUDP, err := net.ListenPacket("udp4", "0.0.0.0:53")
	if err != nil {
		t.Fatalf("taking port 53 on every address of the host: %v", err)
	}
	defer hostUDP.Close()
	hostTCP, err := net.Listen("tcp4", "0.0.0.0:53")
	if err != nil {
		t.Fatalf("taking port 53 on every address of the host: %v", err)
	}
	defer hostTCP.Close()
	strays := make(chan string, 16)
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := hostUDP.ReadFrom(buf)
			if err != nil {
				return
			}
			strays <- from.String()
		}
	}()

	s := newSkiffd(t)
	s.start()
	const script = `nslookup kubernetes.default.svc.cluster.local`
	if _, err := s.client.CoreV1().Pods("default").Create(context.Background(), shPod("resolver", corev1.RestartPolicyNever, script), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.client, "resolver", 2*time.Minute, "finished", isFinished)
	first := strings.TrimSuffix(s.serviceCIDR, "0/24") + "1"
	if log := podLog(t, s.client, "resolver"); !strings.Contains(log, "Name:\tkubernetes.default.svc.cluster.local\nAddress: "+first) {
		t.Errorf("the pod's lookup of the kubernetes Service:\n%s", log)
	}
	for _, proto := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: proto, Timeout: 5 * time.Second}
		resp, _, err := c.Exchange(new(dns.Msg).SetQuestion("kubernetes.default.svc.cluster.local.", dns.TypeA), net.JoinHostPort(s.dnsIP(t), "53"))
		if err != nil || len(resp.Answer) != 1 || resp.Answer[0].(*dns.A).A.String() != first {
			t.Errorf("the host's query over %s: %v, %v; want %s", proto, resp, err, first)
		}
	}
	select {
	case from := <-strays:
		t.Errorf("the host's own DNS got a query from %s", from)
	default:
	}
}

// TestServiceBadInput: kube-apiserver's 422 causes for invalid Services,
// NodePort and LoadBalancer refused, and a --service-cidr that overlaps
// the pod subnet or a host route refused at start.
func TestServiceBadInput(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	tests := map[string]struct {
		spec corev1.ServiceSpec
		want string
	}{
		"NodePort": {corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}},
			`Service "bad" is invalid: spec.type: Invalid value: "NodePort": skiff serves ClusterIP and headless Services only`},
		"LoadBalancer": {corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
			`Service "bad" is invalid: spec.type: Invalid value: "LoadBalancer": skiff serves ClusterIP and headless Services only`},
		"no ports": {corev1.ServiceSpec{Selector: map[string]string{"a": "b"}}, `Service "bad" is invalid: spec.ports: Required value`},
		"clusterIP outside the range": {corev1.ServiceSpec{ClusterIP: "192.0.2.77", Ports: []corev1.ServicePort{{Port: 80}}},
			`Service "bad" is invalid: spec.clusterIPs: Invalid value: ["192.0.2.77"]: failed to allocate IP 192.0.2.77: the provided network does not match the current range`},
	}
	for name, tc := range tests {
		_, err := s.client.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: tc.spec}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant 422 %s", name, err, tc.want)
		}
	}
	s.stop()

	// A range the pod subnet or a host route uses is refused at start.
	bad := map[string]string{"pod subnet": s.subnet, "host route": hostRoute(t)}
	for name, cidr := range bad {
		cmd := exec.Command(skiffdBin, "--data-dir", t.TempDir(), "--containerd-address", containerd.Address, "--listen", freeAddr(t),
			"--socket", filepath.Join(t.TempDir(), "s.sock"), "--pod-subnet", s.subnet, "--pod-bridge", s.bridge, "--service-cidr", cidr)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--service-cidr") || !strings.Contains(string(out), "overlaps") {
			t.Errorf("%s %s: skiffd %v:\n%s", name, cidr, err, out)
		}
	}
}
