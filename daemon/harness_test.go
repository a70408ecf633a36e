//go:build integration

package daemon_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/logs"
	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/network/nettest"
	"github.com/skiff-sh/skiff/pki"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
	"github.com/skiff-sh/skiff/serviceproxy"
)

// The private containerd every test of this package shares, and the
// skiffd and skiff binaries built once for them; the log driver is built
// beside skiffd, where skiffd finds it.
var (
	containerd *runtimetest.Env
	skiffdBin  string
	skiffBin   string
	testImage  string
)

// skiffdTags are the build tags the Makefile builds skiffd with
// (SKIFFD_TAGS): tests run the binary users run.
const skiffdTags = "no_dynamic_plugins"

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if testImage = os.Getenv(runtimetest.ImageEnv); testImage == "" {
		fmt.Fprintf(os.Stderr, "%s must name the test image tarball (make test sets it)\n", runtimetest.ImageEnv)
		return 1
	}
	return runtimetest.Main(m, func(env *runtimetest.Env, dir string) error {
		containerd = env
		skiffdBin, skiffBin = filepath.Join(dir, "skiffd"), filepath.Join(dir, "skiff")
		driverBin := filepath.Join(dir, logs.DriverBinary)
		for bin, pkg := range map[string]string{skiffdBin: "../cmd/skiffd", skiffBin: "../cmd/skiff", driverBin: "../cmd/skiff-log-driver"} {
			build := exec.Command("go", "build", "-tags", skiffdTags, "-o", bin, pkg)
			build.Stdout, build.Stderr = os.Stderr, os.Stderr
			if err := build.Run(); err != nil {
				return fmt.Errorf("building %s: %w", pkg, err)
			}
		}
		return nil
	})
}

// skiffd is one skiffd process under test.
type skiffd struct {
	t       testing.TB
	dataDir string
	socket  string
	addr    string
	cmd     *exec.Cmd
	exited  chan struct{}
	client  *kubernetes.Clientset
	// kubeconfig is the kubeconfig skiffd writes at each start
	// (--write-kubeconfig); caPEM, adminCert and adminKey are its CA and
	// admin credentials, and https a client with them.
	kubeconfig          string
	caPEM               []byte
	adminCert, adminKey []byte
	https               *http.Client
	proxy               *httptest.Server // plainProxy's
	// listen is skiffd's --listen when not addr (which clients then dial).
	listen string
	// ownPKI: skiffd makes its PKI; the clients follow the kubeconfig it
	// writes (loaded, the one they use now).
	ownPKI bool
	loaded []byte
	// plainHTTP: a skiffd from before TLS (bin), served and probed over
	// plain HTTP, given no TLS flag.
	plainHTTP bool
	extra     []string
	bridge    string
	subnet    string
	gateway   string // the bridge's address
	// serviceCIDR is the skiffd's own ClusterIP range: the Service rules
	// of every skiffd on the host see all traffic.
	serviceCIDR string
	// logPath is skiffd's output; "" = skiffd.log in the data dir.
	logPath string
	// cd is the containerd this skiffd uses (default: the package's);
	// bin its binary (default: skiffdBin); env is added to its environment.
	cd  *runtimetest.Env
	bin string
	env []string
}

func (s *skiffd) logFile() string {
	if s.logPath != "" {
		return s.logPath
	}
	return filepath.Join(s.dataDir, "skiffd.log")
}

// newSkiffd prepares (but does not start) a skiffd with its own data dir and
// containerd namespace, using millisecond back-offs.
func newSkiffd(t testing.TB, extra ...string) *skiffd {
	t.Helper()
	sockDir, err := os.MkdirTemp("/tmp", "sk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	// Every skiffd has its own pod address range and bridge, apart from
	// every other test process on the machine; both go after the test.
	podNet := nettest.Reserve(t)
	n := skiffdCount.Add(1)
	s := &skiffd{
		cd: containerd, bin: skiffdBin,
		t: t, dataDir: t.TempDir(), socket: filepath.Join(sockDir, "skiff.sock"), addr: freeAddr(t), extra: extra,
		bridge: podNet.Bridge, subnet: podNet.Subnet, gateway: podNet.Gateway(),
		// NOTE: the pid keeps the test binaries that run at once (go test -p)
		// off each other's ranges.
		serviceCIDR: fmt.Sprintf("10.%d.%d.0/24", 232+(os.Getpid()/256+int(n))%16, (os.Getpid()+int(n)*7)%256),
	}
	s.kubeconfig = filepath.Join(s.dataDir, "kubeconfig.yaml")
	s.preparePKI()
	t.Cleanup(s.cleanup)
	return s
}

// preparePKI makes (or reads) the PKI skiffd finds in its data dir at its
// first start and keeps, with skiffd's own package, so that the clients
// exist before skiffd does (skiffd re-issues the serving certificate if
// its names differ; the CA and the admin's certificate it keeps). It runs
// again at each start, for tests that move the data dir; a skiffd with
// ownPKI makes all of it itself (TestTLSServing).
func (s *skiffd) preparePKI() {
	s.t.Helper()
	// The names skiffd gives its serving certificate, so that neither
	// issues it again for the other (which a full data disk would refuse).
	prefix, err := netip.ParsePrefix(s.serviceCIDR)
	if err != nil {
		s.t.Fatal(err)
	}
	certs, err := pki.Load(pki.Config{Dir: filepath.Join(s.dataDir, "pki"), ServiceIP: net.IP(prefix.Addr().Next().AsSlice())})
	if err != nil {
		s.t.Fatal(err)
	}
	ca := certs.CABundle()
	if s.client != nil && bytes.Equal(ca, s.caPEM) {
		return
	}
	s.caPEM = ca
	s.adminCert, s.adminKey = certs.AdminCredentials()
	s.https = nil
	s.client = kubernetes.NewForConfigOrDie(s.restConfig())
}

// url is the https URL of path on skiffd's TCP listener.
func (s *skiffd) url(path string) string { return "https://" + s.addr + path }

// restConfig is a client-go configuration for skiffd's TCP listener as its
// admin (the admin's client certificate, skiffd's CA), JSON bodies.
func (s *skiffd) restConfig() *rest.Config {
	return &rest.Config{
		Host:            s.url(""),
		QPS:             500,
		Burst:           1000,
		ContentConfig:   rest.ContentConfig{ContentType: "application/json"},
		TLSClientConfig: rest.TLSClientConfig{CAData: s.caPEM, CertData: s.adminCert, KeyData: s.adminKey},
	}
}

// tlsConfig trusts skiffd's CA and presents the admin's certificate.
func (s *skiffd) tlsConfig() *tls.Config {
	s.t.Helper()
	pair, err := tls.X509KeyPair(s.adminCert, s.adminKey)
	if err != nil {
		s.t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(s.caPEM)
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}
}

// httpClient is an https client of skiffd's TCP listener as its admin.
func (s *skiffd) httpClient() *http.Client {
	s.t.Helper()
	if s.https == nil {
		s.https = &http.Client{Transport: &http.Transport{TLSClientConfig: s.tlsConfig(), ForceAttemptHTTP2: true}}
	}
	return s.https
}

// get GETs path on skiffd's TCP listener as its admin.
func (s *skiffd) get(path string) (*http.Response, error) {
	return s.httpClient().Get(s.url(path))
}

// kubectlCmd is kubectl (the one on PATH, or bin) with skiffd's written
// kubeconfig and its own cache dir.
func (s *skiffd) kubectlCmd(bin string, args ...string) *exec.Cmd {
	if bin == "" {
		bin = "kubectl"
	}
	return exec.Command(bin, append([]string{"--kubeconfig", s.kubeconfig, "--cache-dir", filepath.Join(s.dataDir, "kubectl-cache")}, args...)...)
}

// keepGoroutines saves, for a failed test, the stacks of skiffd's
// goroutines into SKIFF_TEST_LOGS before anything is cleaned up: a hang
// shows where it waits.
func (s *skiffd) keepGoroutines() {
	dir := os.Getenv("SKIFF_TEST_LOGS")
	if dir == "" || !s.t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := s.client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/goroutine").Param("debug", "2").DoRaw(ctx)
	if err != nil {
		s.t.Logf("skiffd's goroutines: %v", err)
		return
	}
	name := strings.ReplaceAll(s.t.Name(), "/", "_") + ".goroutines.txt"
	_ = os.WriteFile(filepath.Join(dir, name), b, 0o600)
}

// skiffdCount numbers the skiffds of this test process.
var skiffdCount atomic.Int32

// cleanup deletes what the test left running through skiffd (so that pod
// networks are torn down properly), stops skiffd, and removes the pod
// networks a stopped or killed skiffd left (the bridge and its iptables
// rules go with the reserved network, after this).
func (s *skiffd) cleanup() {
	if s.running() {
		s.keepGoroutines()
		s.deleteEverything()
	}
	s.stop()
	if s.t.Failed() {
		b, _ := os.ReadFile(s.logFile())
		// NOTE: the tail is mostly the test's cleanup; what went wrong
		// before it is usually in the warnings and errors.
		s.t.Logf("skiffd log, warnings and errors (the last 100):\n%s", tail(problems(string(b)), 100))
		s.t.Logf("skiffd log:\n%s", tail(string(b), 80))
		// SKIFF_TEST_LOGS keeps the whole log of a failed test's skiffd.
		if dir := os.Getenv("SKIFF_TEST_LOGS"); dir != "" {
			name := strings.ReplaceAll(s.t.Name(), "/", "_") + ".log"
			_ = os.WriteFile(filepath.Join(dir, name), b, 0o600)
		}
	}
	if s.cmd != nil {
		s.removePodNetworks()
	}
	// What even that could not remove: the namespaces' mounts, and the
	// volumes of pods whose teardown (which runs after the pod object is
	// gone, as the kubelet's volume manager's does) the stop cut short —
	// a restarted skiffd's sweep would unmount them.
	for _, m := range mountsUnder(s.dataDir) {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
	if err := serviceproxy.Remove(context.Background(), s.bridge); err != nil {
		s.t.Logf("removing the service rules: %v", err)
	}
}

// mountsUnder lists the mount points below dir, deepest first.
func mountsUnder(dir string) []string {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil
	}
	found := make([]string, 0, len(mounts))
	for _, m := range mounts {
		found = append(found, m.Mountpoint)
	}
	sort.Slice(found, func(i, j int) bool { return len(found[i]) > len(found[j]) })
	return found
}

// removePodNetworks tears down, with skiffd's own package on its data dir,
// the pod networks left by pods that were still there when skiffd stopped
// (their veths, addresses, hostPort rules and namespaces), as a restarted
// skiffd would once the pods are gone.
func (s *skiffd) removePodNetworks() {
	n, err := network.New(network.Config{DataDir: filepath.Join(s.dataDir, "network"), Subnet: s.subnet, Bridge: s.bridge})
	if err != nil {
		s.t.Errorf("opening the pod network to clean up: %v", err)
		return
	}
	uids, err := n.List()
	if err != nil {
		s.t.Errorf("listing the pod networks left: %v", err)
	}
	for _, uid := range uids {
		if err := n.Teardown(context.Background(), uid); err != nil {
			s.t.Errorf("removing the network of pod %s: %v", uid, err)
		}
	}
}

func (s *skiffd) running() bool {
	if s.exited == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// deleteEverything deletes all Jobs and Pods and waits until the pods are gone.
func (s *skiffd) deleteEverything() {
	ctx := context.Background()
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	if jobs, err := s.client.BatchV1().Jobs("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, j := range jobs.Items {
			_ = s.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
		}
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		pods, err := s.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) == 0 {
			return
		}
		for _, p := range pods.Items {
			_ = s.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Errorf("pods left after deleting everything")
}

// start runs skiffd and waits until /readyz answers 200.
func (s *skiffd) start() {
	s.t.Helper()
	s.startAndWait("/readyz")
}

// startAndWait runs skiffd and waits until path answers 200.
func (s *skiffd) startAndWait(path string) {
	s.t.Helper()
	args := []string{
		"--data-dir", s.dataDir,
		"--containerd-address", s.cd.Address,
		"--containerd-state", s.cd.State,
		"--containerd-namespace", s.namespace(),
		// NOTE: on every address unless a test says otherwise, so that
		// pods reach the API through the kubernetes Service (its endpoint
		// is the node's address).
		"--listen", cmp.Or(s.listen, ":"+s.port()),
		"--socket", s.socket,
		"--pod-backoff-base", "10ms", "--pod-backoff-max", "100ms",
		"--restart-backoff-base", "10ms", "--restart-backoff-max", "100ms",
		"--log-level", "debug",
		// Each test has its own containerd namespace: give it the test image.
		"--import-image", testImage,
		"--pod-subnet", s.subnet, "--pod-bridge", s.bridge, "--service-cidr", s.serviceCIDR,
	}
	if !s.plainHTTP {
		args = append(args, "--write-kubeconfig", s.kubeconfig)
		if !s.ownPKI {
			s.preparePKI()
		}
	}
	s.cmd = exec.Command(s.bin, append(args, s.extra...)...)
	s.cmd.Env = append(os.Environ(), s.env...)
	logFile, err := os.OpenFile(s.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func() { s.cmd.Wait(); logFile.Close(); close(s.exited) }()
	waitFor(s.t, 60*time.Second, "skiffd answering "+path, func() (bool, error) {
		select {
		case <-s.exited:
			return false, fmt.Errorf("skiffd exited")
		default:
		}
		if s.ownPKI {
			written, err := os.ReadFile(s.kubeconfig)
			if err != nil {
				return false, nil // not written yet
			}
			if !bytes.Equal(written, s.loaded) {
				s.useWrittenKubeconfig()
				s.loaded = written
			}
		}
		get := s.get
		if s.plainHTTP {
			get = func(path string) (*http.Response, error) { return http.Get("http://" + s.addr + path) }
		}
		resp, err := get(path)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// namespace is the containerd namespace of this skiffd: one per test.
func (s *skiffd) namespace() string {
	return "skiff-" + strings.ToLower(strings.ReplaceAll(s.t.Name(), "/", "-"))
}

// kill sends SIGKILL to skiffd and waits for it to be gone.
func (s *skiffd) kill() {
	s.t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// stop asks skiffd to shut down (SIGTERM) and waits.
func (s *skiffd) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// freeAddr is a loopback address on a port free on every address.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
}

// port is the port of the skiffd's API.
func (s *skiffd) port() string {
	_, p, _ := net.SplitHostPort(s.addr)
	return p
}

// waitFor polls cond until it is true, fails on its error or the deadline.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// problems are the lines of a skiffd log at level warning or error.
func problems(log string) string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, "level=warning") || strings.Contains(line, "level=error") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// shJob is a Job running `sh -c script` in the test image.
func shJob(name, script string, completions, parallelism, backoffLimit int32, policy corev1.RestartPolicy) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Completions:  &completions,
			Parallelism:  &parallelism,
			BackoffLimit: &backoffLimit,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:                 policy,
				TerminationGracePeriodSeconds: ptr(int64(1)),
				Containers: []corev1.Container{{
					Name:    "main",
					Image:   "busybox:1.35",
					Command: []string{"sh", "-c", script},
				}},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// waitJob waits until the Job has the condition type True.
func waitJob(t testing.TB, c *kubernetes.Clientset, ns, name string, cond batchv1.JobConditionType, timeout time.Duration) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	waitFor(t, timeout, fmt.Sprintf("job %s condition %s", name, cond), func() (bool, error) {
		j, err := c.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		job = j
		for _, c := range j.Status.Conditions {
			if c.Type == cond && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return job
}

func jobPods(t testing.TB, c *kubernetes.Clientset, job *batchv1.Job) []corev1.Pod {
	t.Helper()
	pods, err := c.CoreV1().Pods(job.Namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: "batch.kubernetes.io/controller-uid=" + string(job.UID),
	})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func readAll(t *testing.T, r io.ReadCloser) string {
	t.Helper()
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// anonymousClient is an https client of skiffd's TCP listener that trusts
// its CA and presents no certificate.
func (s *skiffd) anonymousClient() *http.Client {
	s.t.Helper()
	c := s.tlsConfig()
	c.Certificates = nil
	return &http.Client{Transport: &http.Transport{TLSClientConfig: c}}
}

// plainProxy is the URL of a plain-HTTP proxy on the host's loopback that
// passes requests to skiffd as its admin: for hostNetwork pods whose
// busybox has neither skiffd's CA nor a client certificate.
func (s *skiffd) plainProxy() string {
	s.t.Helper()
	if s.proxy == nil {
		target, err := url.Parse(s.url(""))
		if err != nil {
			s.t.Fatal(err)
		}
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.Transport = s.httpClient().Transport
		s.proxy = httptest.NewServer(rp)
		s.t.Cleanup(s.proxy.Close)
	}
	return s.proxy.URL
}

// useWrittenKubeconfig makes the harness's clients those of the
// kubeconfig skiffd wrote: its CA and admin credentials.
func (s *skiffd) useWrittenKubeconfig() {
	s.t.Helper()
	kc, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		s.t.Fatal(err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || kc.Clusters[ctx.Cluster] == nil || kc.AuthInfos[ctx.AuthInfo] == nil {
		s.t.Fatalf("kubeconfig %s: no current context with a cluster and a user", s.kubeconfig)
	}
	user := kc.AuthInfos[ctx.AuthInfo]
	s.caPEM = kc.Clusters[ctx.Cluster].CertificateAuthorityData
	s.adminCert, s.adminKey = user.ClientCertificateData, user.ClientKeyData
	s.https = nil
	s.client = kubernetes.NewForConfigOrDie(s.restConfig())
}
