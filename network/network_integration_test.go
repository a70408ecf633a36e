//go:build integration

package network_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/libcni"

	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/network/nettest"
	"github.com/skiff-sh/skiff/runtime"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// env is the private containerd the tests run their pods' containers in.
var env *runtimetest.Env

func TestMain(m *testing.M) {
	os.Exit(runtimetest.Main(m, func(e *runtimetest.Env, _ string) error {
		env = e
		return nil
	}))
}

var counter atomic.Int64

// unique is a name no other test (nor another test process) uses.
func unique(prefix string) string {
	return fmt.Sprintf("%s%d-%d", prefix, os.Getpid(), counter.Add(1))
}

// newNetwork makes a Network with a bridge and a /24 of its own (see
// nettest), so that tests and test processes running at once do not share
// addresses; the bridge and its rules go when the test ends.
func newNetwork(t testing.TB, dataDir string) (*network.Network, network.Config) {
	t.Helper()
	reserved := nettest.Reserve(t)
	cfg := network.Config{
		DataDir: dataDir,
		Bridge:  reserved.Bridge,
		Subnet:  reserved.Subnet,
		HostIP:  hostIP(t),
	}
	return openNetwork(t, cfg), cfg
}

// openNetwork is a Network on cfg, as a (re)started skiffd makes it.
func openNetwork(t testing.TB, cfg network.Config) *network.Network {
	t.Helper()
	n, err := network.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Prepare(); err != nil {
		t.Fatalf("pod network unusable here: %v", err)
	}
	return n
}

// hostIP is this machine's first global IPv4 address.
func hostIP(t testing.TB) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.To4() != nil && ipnet.IP.IsGlobalUnicast() && !strings.HasPrefix(ipnet.IP.String(), "10.") {
			return ipnet.IP.String()
		}
	}
	t.Fatal("no global IPv4 address on this machine")
	return ""
}

// setup sets a pod's sandbox up and tears it down when the test ends.
func setup(t *testing.T, n *network.Network, name string, ports ...network.PortMapping) (network.Pod, network.Sandbox) {
	t.Helper()
	pod := network.Pod{UID: unique("uid-"), Namespace: "default", Name: name, Hostname: name, Ports: ports}
	sb, err := n.Setup(context.Background(), pod)
	if err != nil {
		t.Fatalf("Setup(%s): %v", name, err)
	}
	t.Cleanup(func() {
		if err := n.Teardown(context.Background(), pod.UID); err != nil {
			t.Errorf("Teardown(%s): %v", name, err)
		}
	})
	return pod, sb
}

func newRuntime(t *testing.T) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(context.Background(), env.Address, env.Namespace, "/bin/false")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// run starts a busybox container in the pod's sandbox (output discarded)
// and removes it when the test ends.
func run(t *testing.T, rt *runtime.Runtime, pod network.Pod, sb network.Sandbox, command ...string) <-chan runtime.ExitStatus {
	t.Helper()
	ctx := context.Background()
	cfg := runtime.ContainerConfig{
		ID:             unique("net-"),
		Image:          runtimetest.Image,
		Command:        command,
		Hostname:       pod.Hostname,
		Labels:         map[string]string{runtime.LabelPodUID: pod.UID},
		NetNSPath:      sb.NetNSPath,
		HostsPath:      sb.HostsPath,
		ResolvConfPath: sb.ResolvConfPath,
	}
	if err := rt.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Remove(context.Background(), cfg.ID); err != nil {
			t.Errorf("removing %s: %v", cfg.ID, err)
		}
	})
	_, exit, err := rt.Start(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	return exit
}

// exitCode waits (bounded) for a container's exit.
func exitCode(t *testing.T, exit <-chan runtime.ExitStatus) int32 {
	t.Helper()
	select {
	case st := <-exit:
		return st.Code
	case <-time.After(time.Minute):
		t.Fatal("container did not exit within a minute")
		return -1
	}
}

// serve runs busybox httpd on port 8080 in the pod, answering body.
func serve(t *testing.T, rt *runtime.Runtime, pod network.Pod, sb network.Sandbox, body string) {
	t.Helper()
	run(t, rt, pod, sb, "sh", "-c", fmt.Sprintf("mkdir /tmp/www && echo %s > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www", body))
}

// get fetches url until it answers (the server may still be starting)
// and returns the body.
func get(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(string(body))
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond) // polling a server that is starting up
	}
}

func TestPodsGetTheirOwnIPs(t *testing.T) {
	n, cfg := newNetwork(t, t.TempDir())
	_, a := setup(t, n, "a")
	_, b := setup(t, n, "b")
	_, subnet, _ := net.ParseCIDR(cfg.Subnet)
	for _, sb := range []network.Sandbox{a, b} {
		if ip := net.ParseIP(sb.IP); ip == nil || !subnet.Contains(ip) {
			t.Errorf("pod IP %q not in %s", sb.IP, cfg.Subnet)
		}
		if sb.NetNSPath == "" {
			t.Errorf("no network namespace: %+v", sb)
		}
	}
	if a.IP == b.IP || a.NetNSPath == b.NetNSPath {
		t.Errorf("two pods share a network: %+v and %+v", a, b)
	}
}

func TestPodsReachEachOtherAndTheHostReachesThem(t *testing.T) {
	rt := newRuntime(t)
	n, _ := newNetwork(t, t.TempDir())
	serverPod, server := setup(t, n, "server")
	clientPod, client := setup(t, n, "client")
	serve(t, rt, serverPod, server, "hello-from-server")

	if got := get(t, "http://"+server.IP+":8080/"); got != "hello-from-server" {
		t.Errorf("host GET pod = %q", got)
	}
	fetch := fmt.Sprintf("wget -q -O - http://%s:8080/ | grep -qx hello-from-server", server.IP)
	if code := exitCode(t, run(t, rt, clientPod, client, "sh", "-c", fetch)); code != 0 {
		t.Errorf("pod to pod: %q exited %d", fetch, code)
	}
}

func TestHostPort(t *testing.T) {
	rt := newRuntime(t)
	n, cfg := newNetwork(t, t.TempDir())
	ln, err := net.Listen("tcp", ":0") // a port no one uses now
	if err != nil {
		t.Fatal(err)
	}
	hostPort := int32(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	pod, sb := setup(t, n, "web", network.PortMapping{HostPort: hostPort, ContainerPort: 8080, Protocol: "tcp"})
	serve(t, rt, pod, sb, "hello-via-hostport")
	for _, host := range []string{cfg.HostIP, "127.0.0.1"} {
		url := fmt.Sprintf("http://%s:%d/", host, hostPort)
		if got := get(t, url); got != "hello-via-hostport" {
			t.Errorf("GET %s = %q", url, got)
		}
	}
}

func TestEtcFilesInThePod(t *testing.T) {
	rt := newRuntime(t)
	n, _ := newNetwork(t, t.TempDir())
	pod, sb := setup(t, n, "files")
	script := fmt.Sprintf(`set -e
grep -q "^%s	files$" /etc/hosts
grep -q "^127.0.0.1	localhost$" /etc/hosts
! grep -q "nameserver 127\." /etc/resolv.conf
test "$(hostname)" = files
ip -4 addr show eth0 | grep -q "inet %s/"
ip link show lo | grep -q UP`, sb.IP, sb.IP)
	if code := exitCode(t, run(t, rt, pod, sb, "sh", "-c", script)); code != 0 {
		t.Errorf("checks in the pod exited %d:\n%s", code, script)
	}
}

func TestTeardownFreesTheIP(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	n, _ := newNetwork(t, dataDir)
	pod := network.Pod{UID: unique("uid-"), Namespace: "default", Name: "gone", Hostname: "gone"}
	sb, err := n.Setup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	reservation := filepath.Join(dataDir, "ipam", "skiff", sb.IP)
	if _, err := os.Stat(reservation); err != nil {
		t.Fatalf("no IPAM reservation for %s: %v", sb.IP, err)
	}
	for i := 0; i < 2; i++ { // idempotent
		if err := n.Teardown(ctx, pod.UID); err != nil {
			t.Fatalf("Teardown #%d: %v", i+1, err)
		}
	}
	if _, err := os.Stat(reservation); !os.IsNotExist(err) {
		t.Errorf("IP %s still reserved after Teardown (%v)", sb.IP, err)
	}
	if _, err := os.Stat(sb.NetNSPath); !os.IsNotExist(err) {
		t.Errorf("network namespace %s still there after Teardown (%v)", sb.NetNSPath, err)
	}
	if uids, err := n.List(); err != nil || len(uids) != 0 {
		t.Errorf("List after Teardown = %v, %v", uids, err)
	}
	// A pod that never had a sandbox tears down as well.
	if err := n.Teardown(ctx, unique("never-")); err != nil {
		t.Errorf("Teardown of an unknown pod: %v", err)
	}
}

// TestTeardownOverAnEmptyCachedResult: skiffd killed while libcni wrote
// its cached ADD result leaves the file empty; libcni then refuses every
// DEL of that sandbox, which must still go.
func TestTeardownOverAnEmptyCachedResult(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	n, _ := newNetwork(t, dataDir)
	pod, sb := setup(t, n, "cut")
	cached, err := filepath.Glob(filepath.Join(libcni.CacheDir, "results", "*-"+pod.UID+"-*"))
	if err != nil || len(cached) != 1 {
		t.Fatalf("cached results of %s: %v, %v; want one", pod.UID, cached, err)
	}
	if err := os.Truncate(cached[0], 0); err != nil {
		t.Fatal(err)
	}
	if err := n.Teardown(ctx, pod.UID); err != nil {
		t.Fatalf("Teardown over an empty cached result: %v", err)
	}
	if _, err := os.Stat(sb.NetNSPath); !os.IsNotExist(err) {
		t.Errorf("network namespace %s still there after Teardown (%v)", sb.NetNSPath, err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "ipam", "skiff", sb.IP)); !os.IsNotExist(err) {
		t.Errorf("IP %s still reserved after Teardown (%v)", sb.IP, err)
	}
}

func TestRestartReusesTheSandbox(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	n, cfg := newNetwork(t, dataDir)
	pod, before := setup(t, n, "survivor")

	restarted := openNetwork(t, cfg) // a new skiffd process on the same data dir
	found, ok, err := restarted.Find(pod.UID)
	if err != nil || !ok {
		t.Fatalf("Find after restart = %v, %v", ok, err)
	}
	if found != before {
		t.Errorf("Find after restart = %+v, want %+v", found, before)
	}
	again, err := restarted.Setup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if again != before {
		t.Errorf("Setup after restart = %+v, want the same sandbox %+v", again, before)
	}
	entries, err := os.ReadDir(filepath.Dir(before.NetNSPath))
	if err != nil || len(entries) != 1 {
		t.Errorf("pod's netns dir holds %d entries (%v), want 1", len(entries), err)
	}
}

func TestInterruptedSetupIsRedone(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	n, _ := newNetwork(t, dataDir)
	pod, first := setup(t, n, "redo")
	// A crash between the CNI ADD and the state file: only the state is lost.
	if err := os.Remove(filepath.Join(dataDir, "pods", pod.UID, "sandbox.json")); err != nil {
		t.Fatal(err)
	}
	second, err := n.Setup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if second.NetNSPath == first.NetNSPath {
		t.Errorf("the half-made namespace %s was kept", first.NetNSPath)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "ipam", "skiff", first.IP)); first.IP != second.IP && !os.IsNotExist(err) {
		t.Errorf("the first IP %s is still reserved (%v)", first.IP, err)
	}
	entries, err := os.ReadDir(filepath.Dir(second.NetNSPath))
	if err != nil || len(entries) != 1 {
		t.Errorf("pod's netns dir holds %d entries (%v), want 1", len(entries), err)
	}
}

func TestConcurrentSetups(t *testing.T) {
	n, _ := newNetwork(t, t.TempDir())
	const pods = 8
	type result struct {
		sb  network.Sandbox
		err error
	}
	results := make(chan result, pods)
	for i := 0; i < pods; i++ {
		pod := network.Pod{UID: unique("uid-"), Namespace: "default", Name: fmt.Sprintf("p%d", i), Hostname: fmt.Sprintf("p%d", i)}
		t.Cleanup(func() {
			if err := n.Teardown(context.Background(), pod.UID); err != nil {
				t.Errorf("Teardown(%s): %v", pod.Name, err)
			}
		})
		go func() {
			sb, err := n.Setup(context.Background(), pod)
			results <- result{sb, err}
		}()
	}
	ips := map[string]bool{}
	for i := 0; i < pods; i++ {
		r := <-results
		if r.err != nil {
			t.Errorf("Setup: %v", r.err)
			continue
		}
		if ips[r.sb.IP] {
			t.Errorf("IP %s given twice", r.sb.IP)
		}
		ips[r.sb.IP] = true
	}
}

// poolRecords lists the sandboxes the pool holds, by their records
// (pods/pool-…/sandbox.json).
func poolRecords(t *testing.T, dataDir string) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dataDir, "pods", "pool-*", "sandbox.json"))
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// waitPool waits until the pool holds want sandboxes.
func waitPool(t *testing.T, dataDir string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(poolRecords(t, dataDir)) != want {
		if time.Now().After(deadline) {
			t.Fatalf("the pool holds %d sandboxes after 30s, want %d", len(poolRecords(t, dataDir)), want)
		}
		time.Sleep(20 * time.Millisecond) // RunPool works in the background
	}
}

// TestPool: sandboxes made ahead are taken by pods without hostPorts and
// made again; a pod with hostPorts gets its own; the next process sweeps
// those no pod took, keeps those pods took (also when a crash left the
// pool's record of one behind), and a pod's Teardown frees what it took.
func TestPool(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	reserved := nettest.Reserve(t)
	cfg := network.Config{DataDir: dataDir, Bridge: reserved.Bridge, Subnet: reserved.Subnet, HostIP: hostIP(t), PoolSize: 2}
	n := openNetwork(t, cfg)
	t.Cleanup(func() { // whatever a failed test left: as the next skiffd would
		sweeper := openNetwork(t, network.Config{DataDir: dataDir, Bridge: reserved.Bridge, Subnet: reserved.Subnet})
		if err := sweeper.SweepPool(); err != nil {
			t.Error(err)
		}
		if err := sweeper.RunPool(ctx); err != nil { // without a pool: the sweep's teardowns only
			t.Error(err)
		}
		uids, _ := sweeper.List()
		for _, uid := range uids {
			if err := sweeper.Teardown(ctx, uid); err != nil {
				t.Error(err)
			}
		}
	})
	poolCtx, stopPool := context.WithCancel(ctx)
	poolDone := make(chan error, 1)
	go func() { poolDone <- n.RunPool(poolCtx) }()
	stop := func() {
		stopPool()
		if err := <-poolDone; err != nil {
			t.Errorf("RunPool: %v", err)
		}
	}
	defer func() {
		if poolCtx.Err() == nil {
			stop()
		}
	}()
	waitPool(t, dataDir, 2)

	pod := network.Pod{UID: unique("uid-"), Namespace: "default", Name: "taker", Hostname: "taker"}
	sb, err := n.Setup(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if dir := filepath.Base(filepath.Dir(sb.NetNSPath)); !strings.HasPrefix(dir, "pool-") {
		t.Fatalf("the pod's namespace %s was not made ahead", sb.NetNSPath)
	}
	rt := newRuntime(t)
	if code := exitCode(t, run(t, rt, pod, sb, "sh", "-c", fmt.Sprintf(`ip -4 addr show eth0 | grep -q "inet %s/" && grep -q "%s.*taker" /etc/hosts`, sb.IP, sb.IP))); code != 0 {
		t.Errorf("eth0 or /etc/hosts of the pod lack its IP %s (exit %d)", sb.IP, code)
	}
	waitPool(t, dataDir, 2) // made again

	withPort := network.Pod{UID: unique("uid-"), Namespace: "default", Name: "ports", Hostname: "ports",
		Ports: []network.PortMapping{{HostPort: 30000 + int32(os.Getpid()%2000), ContainerPort: 80, Protocol: "tcp"}}}
	own, err := n.Setup(ctx, withPort)
	if err != nil {
		t.Fatal(err)
	}
	if dir := filepath.Base(filepath.Dir(own.NetNSPath)); dir != withPort.UID {
		t.Errorf("the hostPort pod's namespace %s is not its own", own.NetNSPath)
	}

	// A crash between a pod's taking a sandbox and the pool's forgetting
	// it: the pool's record is back, the pod's names the same sandbox.
	second := network.Pod{UID: unique("uid-"), Namespace: "default", Name: "second", Hostname: "second"}
	sb2, err := n.Setup(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	poolID := filepath.Base(filepath.Dir(sb2.NetNSPath))
	record, err := os.ReadFile(filepath.Join(dataDir, "pods", second.UID, "sandbox.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dataDir, "pods", poolID), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "pods", poolID, "sandbox.json"), record, 0o600); err != nil {
		t.Fatal(err)
	}
	waitPool(t, dataDir, 3) // two made ahead, and the record the crash left
	made := poolRecords(t, dataDir)
	stop()

	restarted := openNetwork(t, network.Config{DataDir: dataDir, Bridge: reserved.Bridge, Subnet: reserved.Subnet, HostIP: hostIP(t)})
	if err := restarted.SweepPool(); err != nil {
		t.Fatal(err)
	}
	if err := restarted.RunPool(ctx); err != nil { // without a pool: the sweep's teardowns only
		t.Fatal(err)
	}
	if left := poolRecords(t, dataDir); len(left) != 0 {
		t.Errorf("pool records after the sweep: %v", left)
	}
	for _, rec := range made {
		id := filepath.Base(filepath.Dir(rec))
		if id == filepath.Base(filepath.Dir(sb.NetNSPath)) || id == poolID {
			continue // taken
		}
		if _, err := os.Stat(filepath.Join(dataDir, "netns", id)); !os.IsNotExist(err) {
			t.Errorf("the untaken sandbox %s is still there (%v)", id, err)
		}
	}
	for _, p := range []struct {
		pod network.Pod
		sb  network.Sandbox
	}{{pod, sb}, {second, sb2}, {withPort, own}} {
		found, ok, err := restarted.Find(p.pod.UID)
		if err != nil || !ok || found != p.sb {
			t.Errorf("pod %s after the sweep: %+v, %v, %v; want %+v", p.pod.Name, found, ok, err, p.sb)
		}
	}
	uids, err := restarted.List()
	if err != nil || len(uids) != 3 {
		t.Errorf("List = %v, %v; want the three pods", uids, err)
	}
	ipam := filepath.Join(dataDir, "ipam", "skiff")
	for _, p := range []network.Pod{pod, second, withPort} {
		if err := restarted.Teardown(ctx, p.UID); err != nil {
			t.Fatalf("Teardown(%s): %v", p.Name, err)
		}
	}
	entries, err := os.ReadDir(ipam)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if net.ParseIP(e.Name()) != nil {
			t.Errorf("address %s still reserved after every pod's teardown", e.Name())
		}
	}
	for _, dir := range []string{"netns", "pods"} {
		if left, _ := os.ReadDir(filepath.Join(dataDir, dir)); len(left) != 0 {
			t.Errorf("%s left: %d entries", dir, len(left))
		}
	}
}

// runToEnd runs a busybox container in the pod's sandbox to its end and
// removes it, as the pod worker does before it releases the sandbox.
func runToEnd(t *testing.T, rt *runtime.Runtime, pod network.Pod, sb network.Sandbox, command ...string) int32 {
	t.Helper()
	ctx := context.Background()
	cfg := runtime.ContainerConfig{
		ID: unique("net-"), Image: runtimetest.Image, Command: command, Hostname: pod.Hostname,
		Labels:    map[string]string{runtime.LabelPodUID: pod.UID},
		NetNSPath: sb.NetNSPath, HostsPath: sb.HostsPath, ResolvConfPath: sb.ResolvConfPath,
	}
	if err := rt.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	_, exit, err := rt.Start(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	code := exitCode(t, exit)
	if err := rt.Remove(ctx, cfg.ID); err != nil {
		t.Fatal(err)
	}
	return code
}

// TestReleaseRecycles: an ended pod's sandbox taken from the pool goes back
// to it (the back of its queue) and serves a later pod as a new one would;
// one that still holds a TCP socket or a process, or that Teardown
// removes, is destroyed instead.
func TestReleaseRecycles(t *testing.T) {
	ctx := context.Background()
	dataDir := t.TempDir()
	reserved := nettest.Reserve(t)
	n := openNetwork(t, network.Config{DataDir: dataDir, Bridge: reserved.Bridge, Subnet: reserved.Subnet, HostIP: hostIP(t), PoolSize: 1})
	poolCtx, stopPool := context.WithCancel(ctx)
	poolDone := make(chan error, 1)
	go func() { poolDone <- n.RunPool(poolCtx) }()
	var pods []network.Pod
	t.Cleanup(func() {
		stopPool()
		<-poolDone
		sweeper := openNetwork(t, network.Config{DataDir: dataDir, Bridge: reserved.Bridge, Subnet: reserved.Subnet})
		if err := sweeper.SweepPool(); err != nil {
			t.Error(err)
		}
		if err := sweeper.RunPool(ctx); err != nil {
			t.Error(err)
		}
		for _, p := range pods {
			if err := sweeper.Teardown(ctx, p.UID); err != nil {
				t.Error(err)
			}
		}
		for _, dir := range []string{"netns", "pods"} {
			if left, _ := os.ReadDir(filepath.Join(dataDir, dir)); len(left) != 0 {
				t.Errorf("%s left: %d entries", dir, len(left))
			}
		}
	})
	rt := newRuntime(t)
	podSetup := func(name string) (network.Pod, network.Sandbox) {
		t.Helper()
		pod := network.Pod{UID: unique("uid-"), Namespace: "default", Name: name, Hostname: name}
		pods = append(pods, pod)
		sb, err := n.Setup(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		return pod, sb
	}
	exists := func(path string) bool { _, err := os.Stat(path); return err == nil }

	waitPool(t, dataDir, 1)
	first, sb1 := podSetup("first")
	waitPool(t, dataDir, 1) // made again
	if code := runToEnd(t, rt, first, sb1, "true"); code != 0 {
		t.Fatalf("the first pod's container: exit %d", code)
	}
	// Twice at once, as skiffd's recovery sweep beside the pod's worker:
	// the pool must get it once.
	released := make(chan error, 2)
	for range 2 {
		go func() { released <- n.Release(ctx, first.UID) }()
	}
	for range 2 {
		if err := <-released; err != nil {
			t.Fatal(err)
		}
	}
	if got := len(poolRecords(t, dataDir)); got != 2 {
		t.Fatalf("the pool holds %d sandboxes after the release, want 2 (the one made again, the first pod's)", got)
	}
	if exists(filepath.Join(dataDir, "pods", first.UID)) || !exists(sb1.NetNSPath) {
		t.Fatalf("released: the pod's record is left (%v) or its namespace gone (%v)", exists(filepath.Join(dataDir, "pods", first.UID)), !exists(sb1.NetNSPath))
	}

	_, sb2 := podSetup("second")
	if sb2.NetNSPath == sb1.NetNSPath {
		t.Fatal("the recycled sandbox was the next pod's at once, not the back of the queue")
	}
	third, sb3 := podSetup("third")
	if sb3.NetNSPath != sb1.NetNSPath || sb3.IP != sb1.IP {
		t.Fatalf("the third pod got %s (%s), want the first pod's recycled %s (%s)", sb3.NetNSPath, sb3.IP, sb1.NetNSPath, sb1.IP)
	}
	check := fmt.Sprintf(`ip -4 addr show eth0 | grep -q "inet %s/" && grep -q "%s.*third" /etc/hosts && ! grep -q first /etc/hosts && [ "$(ip -o link | wc -l)" = 2 ]`, sb3.IP, sb3.IP)
	if code := runToEnd(t, rt, third, sb3, "sh", "-c", check); code != 0 {
		t.Errorf("the recycled sandbox is not as a new one: eth0, lo and /etc/hosts of the third pod (exit %d)", code)
	}

	// A TCP socket left in TIME_WAIT by the pod: torn down.
	if code := runToEnd(t, rt, third, sb3, "sh", "-c",
		`mkdir /tmp/w && echo hi > /tmp/w/index.html && httpd -p 127.0.0.1:8080 -h /tmp/w && wget -q -O /dev/null http://127.0.0.1:8080/ && for i in $(seq 100); do grep -q " 06 " /proc/net/tcp && exit 0; sleep 0.05; done; exit 1`); code != 0 {
		t.Fatalf("no TCP socket in TIME_WAIT in the third pod (exit %d)", code)
	}
	if err := n.Release(ctx, third.UID); err != nil {
		t.Fatal(err)
	}
	if exists(sb3.NetNSPath) {
		t.Error("a sandbox holding a socket in TIME_WAIT was recycled")
	}

	// A process left in the namespace: torn down.
	fourth, sb4 := podSetup("fourth")
	sleeper := exec.Command("nsenter", "--net="+sb4.NetNSPath, "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	if err := waitFor(func() bool { return inNetNS(sleeper.Process.Pid, sb4.NetNSPath) }); err != nil {
		t.Fatal(err)
	}
	if err := n.Release(ctx, fourth.UID); err != nil {
		t.Fatal(err)
	}
	if exists(sb4.NetNSPath) {
		t.Error("a sandbox holding a process was recycled")
	}

	// Teardown never recycles.
	fifth, sb5 := podSetup("fifth")
	if err := n.Teardown(ctx, fifth.UID); err != nil {
		t.Fatal(err)
	}
	if exists(sb5.NetNSPath) {
		t.Error("Teardown recycled the sandbox")
	}
}

// inNetNS reports whether process pid is in the network namespace at path.
func inNetNS(pid int, path string) bool {
	var a, b syscall.Stat_t
	return syscall.Stat(fmt.Sprintf("/proc/%d/ns/net", pid), &a) == nil && syscall.Stat(path, &b) == nil && a.Ino == b.Ino && a.Dev == b.Dev
}

// waitFor polls cond for up to 10 s.
func waitFor(cond func() bool) error {
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return errors.New("condition not met within 10s")
		}
	}
	return nil
}
