//go:build integration

package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	containerdclient "github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	dto "github.com/prometheus/client_model/go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/logs"
	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

const (
	benchPods        = 200
	benchParallelism = 8
)

// BenchmarkThroughput runs 200 single-container pods running `true` through
// a Job with parallelism 8, from the Job's POST to its Complete condition,
// on a fresh skiffd each time: on the pod network (fsync on, as always) and
// on the host's network; in the same run, the floor (the same containers
// created, started, waited for and deleted straight through containerd's Go
// client at the same parallelism, on the host's network, output discarded)
// and, when a Docker daemon answers, `docker run --rm` of the same image at
// the same parallelism. Between the two, the pods' containers straight
// through skiffd's runtime package (podContainers) split the ratio into
// what a pod's container costs over a bare one and what skiffd costs
// around it. Each run's CPU is split between containerd's side,
// the containers, skiffd and the rest (cpuSplit), a pod's share printed.
// Issue 15 item 2's ratios are checked: a missed one fails the benchmark.
func BenchmarkThroughput(b *testing.B) {
	containerdCgroup, restore := moveContainerd(b)
	defer restore()
	for i := 0; i < b.N; i++ {
		load := loadAverage()
		floorMeter := cpuMeter{b: b, containerdCgroup: containerdCgroup, containersCgroup: containerd.Namespace}
		floorBefore := floorMeter.read()
		floor := rawContainers(b, benchPods, benchParallelism)
		floorCPU := floorMeter.read().since(floorBefore)
		podFloorBefore := floorMeter.read()
		podFloor := podContainers(b, benchPods, benchParallelism)
		podFloorCPU := floorMeter.read().since(podFloorBefore)
		podNet, podCost := skiffJob(b, containerdCgroup, benchPods, benchParallelism, false)
		hostNet, hostCost := skiffJob(b, containerdCgroup, benchPods, benchParallelism, true)
		docker, dockerErr := dockerRuns(benchPods, benchParallelism)
		b.ReportMetric(floor.Seconds(), "containerd-s")
		b.ReportMetric(podFloor.Seconds(), "pod-containers-s")
		b.ReportMetric(podNet.Seconds(), "skiffd-podnet-s")
		b.ReportMetric(hostNet.Seconds(), "skiffd-hostnet-s")
		b.ReportMetric(podNet.Seconds()/floor.Seconds(), "podnet-ratio")
		b.ReportMetric(hostNet.Seconds()/floor.Seconds(), "hostnet-ratio")
		b.ReportMetric(ms(podCost.setup), "cni-setup-ms/pod")
		b.ReportMetric(ms(podCost.teardown), "cni-teardown-ms/pod")
		b.ReportMetric(podCost.commits, "commits/pod")
		b.ReportMetric(ms(podCost.cpu), "skiffd-cpu-ms/pod")
		fmt.Printf("%d `true` pods, parallelism %d (load before %s, after %s):\n", benchPods, benchParallelism, load, loadAverage())
		fmt.Printf("  containerd directly        %7.2f s  (%.1f pods/s; %s)\n", floor.Seconds(), benchPods/floor.Seconds(), floorCPU.perPod(benchPods))
		fmt.Printf("  pods' containers directly  %7.2f s  ratio %.2f (skiffd's runtime package, CRI's spec, log driver and files, host network; %s)\n",
			podFloor.Seconds(), podFloor.Seconds()/floor.Seconds(), podFloorCPU.perPod(benchPods))
		fmt.Printf("  skiffd Job, pod network    %7.2f s  ratio %.2f, %.2f over the pods' containers (%s)\n",
			podNet.Seconds(), podNet.Seconds()/floor.Seconds(), podNet.Seconds()/podFloor.Seconds(), podCost)
		fmt.Printf("  skiffd Job, host network   %7.2f s  ratio %.2f, %.2f over the pods' containers (%s)\n",
			hostNet.Seconds(), hostNet.Seconds()/floor.Seconds(), hostNet.Seconds()/podFloor.Seconds(), hostCost)
		if dockerErr != nil {
			fmt.Printf("  docker run --rm            not measured: %v\n", dockerErr)
		} else {
			b.ReportMetric(docker.Seconds(), "docker-s")
			fmt.Printf("  docker run --rm, host net  %7.2f s  ratio %.2f\n", docker.Seconds(), docker.Seconds()/floor.Seconds())
		}
		checkTargets(b,
			target{name: fmt.Sprintf("%d pods at parallelism %d, pod network, skiffd over containerd", benchPods, benchParallelism),
				got: podNet.Seconds() / floor.Seconds(), limit: 1.0, unit: "×"},
			target{name: fmt.Sprintf("%d pods at parallelism %d, host network, skiffd over containerd", benchPods, benchParallelism),
				got: hostNet.Seconds() / floor.Seconds(), limit: 0.9, unit: "×"},
		)
	}
}

// dockerRuns runs `docker run --rm` of the test image running `true` n
// times, parallelism at a time, on the host's network as the floor's
// containers are. It answers an error when no Docker daemon answers (make
// bench-docker-setup starts one with the test image loaded): Docker is a
// peer to compare with, never a requirement.
func dockerRuns(n, parallelism int) (time.Duration, error) {
	if out, err := exec.Command("docker", "image", "inspect", "busybox:1.35").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("no Docker daemon with busybox:1.35 (make bench-docker-setup): %s", firstLine(out, err))
	}
	start := time.Now()
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// NOTE: bounded: a wedged Docker (seen once: its shims gone,
			// its containers "Up" for ever) must cost the peer's figure,
			// not the benchmark.
			ctx, cancel := context.WithTimeout(context.Background(), dockerRunTimeout)
			defer cancel()
			if out, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--network", "host", "busybox:1.35", "true").CombinedOutput(); err != nil {
				errs <- fmt.Errorf("docker run: %s", firstLine(out, err))
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// dockerRunTimeout bounds one `docker run --rm … true`.
const dockerRunTimeout = time.Minute

// firstLine is a command's first line of output, or its error.
func firstLine(out []byte, err error) string {
	if line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n"); line != "" {
		return line
	}
	return err.Error()
}

// waitPodNetworkPool waits until skiffd has made its pool of pod networks
// (--pod-network-pool, the default): a node's skiffd runs long before its
// Jobs come, and a pool still being made at the start would put its CNI
// ADDs (~100 ms of the machine a sandbox) beside the first pods, also
// those on the host's network.
func (s *skiffd) waitPodNetworkPool(b *testing.B) {
	waitFor(b, time.Minute, fmt.Sprintf("%d pod networks made ahead", network.DefaultPoolSize), func() (bool, error) {
		return s.poolFull(), nil
	})
}

// poolFull reports whether skiffd holds its default pool of pod networks
// made ahead.
func (s *skiffd) poolFull() bool {
	return len(pooledSandboxes(s.dataDir)) >= network.DefaultPoolSize
}

// skiffJob runs the Job on a fresh skiffd and returns the time from its
// POST to its Complete condition, and where skiffd's share of it went.
func skiffJob(b *testing.B, containerdCgroup string, completions, parallelism int32, hostNetwork bool) (time.Duration, jobCost) {
	s := newSkiffd(b)
	s.start()
	defer s.stop()
	s.waitPodNetworkPool(b)
	job := shJob("bench", "true", completions, parallelism, 6, corev1.RestartPolicyNever)
	job.Spec.Template.Spec.Containers[0].Command = []string{"true"}
	job.Spec.Template.Spec.HostNetwork = hostNetwork
	before := s.scrape()
	skiffdBefore := processCPU(b, s.cmd.Process.Pid)
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		// The first 20 s of the Job, when SKIFF_BENCH_PROFILES asks.
		saveProfile(b, s, "profile?seconds=20", fmt.Sprintf("throughput-hostnet-%v-cpu.pprof", hostNetwork))
	}()
	meter := cpuMeter{b: b, containerdCgroup: containerdCgroup, containersCgroup: s.namespace(), skiffdPid: s.cmd.Process.Pid}
	cpuBefore := meter.read()
	start := time.Now()
	created, err := s.client.BatchV1().Jobs("default").Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	watchJobComplete(b, s, created, 10*time.Minute)
	took := time.Since(start)
	split := meter.read().since(cpuBefore)
	<-profiled
	after := s.scrape()
	count := func(family string, labels map[string]string) float64 {
		return (metricValue(after, family, labels) - metricValue(before, family, labels)) / float64(completions)
	}
	cost := jobCost{
		commits:     count("etcd_disk_backend_commit_duration_seconds", nil),
		writes:      count("skiff_store_transaction_duration_seconds", map[string]string{"mode": "write"}),
		reads:       count("skiff_store_transaction_duration_seconds", map[string]string{"mode": "read"}),
		syncs:       count("job_controller_job_syncs_total", nil),
		cpu:         (processCPU(b, s.cmd.Process.Pid) - skiffdBefore) / time.Duration(completions),
		cniShare:    s.cniShare(b),
		hostNetwork: hostNetwork,
		split:       split,
		pods:        int(completions),
	}
	return took, cost
}

// watchJobComplete waits through a watch, as `kubectl wait` does, until
// job is Complete: polling it would charge skiffd (and the machine) with
// a request every few milliseconds that the floor's loop never makes.
func watchJobComplete(b *testing.B, s *skiffd, job *batchv1.Job, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w, err := s.client.BatchV1().Jobs(job.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=" + job.Name, ResourceVersion: job.ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		j, ok := ev.Object.(*batchv1.Job)
		if !ok {
			b.Fatalf("watching job %s: %v event %#v", job.Name, ev.Type, ev.Object)
		}
		for _, c := range j.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				continue
			}
			switch c.Type {
			case batchv1.JobComplete:
				return
			case batchv1.JobFailed:
				b.Fatalf("job %s failed: %s", job.Name, c.Message)
			}
		}
	}
	b.Fatalf("job %s not Complete after %s (or its watch ended)", job.Name, timeout)
}

// jobCost is what a Job cost skiffd per pod: store commits (each one
// fsync), write and read transactions, CPU time, and the pod network.
type jobCost struct {
	commits, writes, reads float64
	syncs                  float64 // the Job controller's syncs of the Job
	cpu                    time.Duration
	cniShare
	hostNetwork bool
	split       cpuSplit // every process's, while the Job ran
	pods        int
}

func (c jobCost) String() string {
	s := fmt.Sprintf("per pod: %.1f store commits, %.1f write and %.1f read transactions, %.1f Job syncs, skiffd CPU %s",
		c.commits, c.writes, c.reads, c.syncs, c.cpu.Round(100*time.Microsecond))
	if !c.hostNetwork {
		s += "; " + c.cniShare.String()
	}
	return s + "; " + c.split.perPod(c.pods)
}

// machineCPU is CPU time of the whole machine (every CPU, every process),
// busy and idle, from /proc/stat: whether a run was bound by the CPUs.
type machineCPU struct{ busy, idle time.Duration }

func readMachineCPU(b *testing.B) machineCPU {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		b.Fatalf("/proc/stat: %q", line)
	}
	var ticks [8]int64
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			b.Fatalf("/proc/stat: %q", line)
		}
	}
	// user nice system idle iowait irq softirq steal, in USER_HZ (100).
	busy := ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
	return machineCPU{busy: time.Duration(busy) * 10 * time.Millisecond, idle: time.Duration(ticks[3]+ticks[4]) * 10 * time.Millisecond}
}

func (m machineCPU) since(before machineCPU) machineCPU {
	return machineCPU{busy: m.busy - before.busy, idle: m.idle - before.idle}
}

// perPod says how busy the machine's CPUs were and what a pod cost them.
func (m machineCPU) perPod(pods int) string {
	total := m.busy + m.idle
	if total <= 0 || pods <= 0 {
		return "machine CPU not measured"
	}
	return fmt.Sprintf("machine CPUs %.0f%% busy, %s of CPU a pod", 100*m.busy.Seconds()/total.Seconds(),
		(m.busy / time.Duration(pods)).Round(100*time.Microsecond))
}

// processCPU is the CPU time (user and system) a process has used.
func processCPU(b *testing.B, pid int) time.Duration {
	return statTicks(b, pid, 11, 12)
}

// cniShare is the mean time per pod skiffd spent inside the pod network's
// Setup and Teardown (the CNI plugin chain, the namespace, the files).
type cniShare struct {
	pods            int
	setup, teardown time.Duration
	taken           int // pods that took a network made ahead (no setup)
	recycled        int // teardowns that gave the network back to the pool
}

func (c cniShare) String() string {
	return fmt.Sprintf("pod network setup %s a pod over %d pods (%d more took one made ahead), teardown %s a pod (%d of them back to the pool)",
		c.setup.Round(100*time.Microsecond), c.pods, c.taken, c.teardown.Round(100*time.Microsecond), c.recycled)
}

// cniLine is the debug line of package network after a Setup or Teardown.
var cniLine = regexp.MustCompile(`msg="pod network (set up|torn down)(: back to the pool)?".* took="?([^"\s]+)`)

// takenLine is its debug line when a pod takes a network made ahead.
var takenLine = regexp.MustCompile(`msg="pod network taken from those made ahead"`)

// cniShare reads skiffd's log (the harness runs it at debug level) for the
// time spent in the pod network, once every pod set up is torn down too
// (that comes after the pod's final status).
func (s *skiffd) cniShare(b *testing.B) cniShare {
	var c cniShare
	waitFor(b, time.Minute, "every pod network torn down", func() (bool, error) {
		var teardowns int
		c, teardowns = s.readCNIShare(b)
		return teardowns >= c.pods+c.taken, nil
	})
	return c
}

func (s *skiffd) readCNIShare(b *testing.B) (c cniShare, teardowns int) {
	data, err := os.ReadFile(filepath.Join(s.dataDir, "skiffd.log"))
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range cniLine.FindAllStringSubmatch(string(data), -1) {
		d, err := time.ParseDuration(m[3])
		if err != nil {
			b.Fatalf("took=%s in skiffd's log: %v", m[3], err)
		}
		if m[1] == "set up" {
			c.pods++
			c.setup += d
		} else {
			teardowns++
			c.teardown += d
			if m[2] != "" {
				c.recycled++
			}
		}
	}
	c.taken = len(takenLine.FindAllIndex(data, -1))
	if c.pods > 0 {
		c.setup /= time.Duration(c.pods)
	}
	if teardowns > 0 {
		c.teardown /= time.Duration(teardowns)
	}
	return c, teardowns
}

// rawContainers creates, starts, waits for and deletes n containers running
// `true` with the given parallelism, straight through containerd.
func rawContainers(b *testing.B, n, parallelism int) time.Duration {
	client, err := containerdclient.New(containerd.Address)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	ctx := namespaces.WithNamespace(context.Background(), containerd.Namespace)
	image, err := client.GetImage(ctx, runtimetest.Image)
	if err != nil {
		b.Fatal(err)
	}
	return inParallel(b, n, parallelism, func(id string) error {
		c, err := client.NewContainer(ctx, id,
			containerdclient.WithNewSnapshot(id, image),
			containerdclient.WithNewSpec(oci.WithImageConfig(image), oci.WithProcessArgs("true"),
				oci.WithHostNamespace(specs.NetworkNamespace)))
		if err != nil {
			return err
		}
		defer c.Delete(ctx, containerdclient.WithSnapshotCleanup)
		task, err := c.NewTask(ctx, cio.NullIO)
		if err != nil {
			return err
		}
		defer task.Delete(ctx)
		exit, err := task.Wait(ctx)
		if err != nil {
			return err
		}
		if err := task.Start(ctx); err != nil {
			return err
		}
		if st := <-exit; st.ExitCode() != 0 {
			return fmt.Errorf("exit code %d", st.ExitCode())
		}
		return nil
	})
}

// podContainers runs the same n containers as rawContainers, but each as
// a pod's container (podContainer), on the host's network. No API, store,
// controller or pod worker: the difference to rawContainers is what the
// pod's container costs, the difference to skiffd's Job what skiffd does
// around it.
func podContainers(b *testing.B, n, parallelism int) time.Duration {
	ctx := context.Background()
	rt := benchRuntime(b)
	base := b.TempDir()
	return inParallel(b, n, parallelism, func(id string) (retErr error) {
		cfg, undo, err := podContainer(base, id, "true")
		if err != nil {
			return err
		}
		defer undo()
		if err := rt.Create(ctx, cfg); err != nil {
			return err
		}
		defer func() {
			if err := rt.Remove(ctx, id); err != nil && retErr == nil {
				retErr = err
			}
		}()
		_, exit, err := rt.Start(ctx, id)
		if err != nil {
			return err
		}
		if st := <-exit; st.Code != 0 {
			return fmt.Errorf("exit code %d", st.Code)
		}
		return nil
	})
}

// benchRuntime is skiffd's runtime package on the test's containerd and
// namespace, with the log driver skiffd would use.
func benchRuntime(b *testing.B) *runtime.Runtime {
	driver := filepath.Join(filepath.Dir(skiffdBin), logs.DriverBinary)
	rt, err := runtime.New(context.Background(), containerd.Address, containerd.Namespace, driver, runtime.WithContainerdState(containerd.State))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

// podContainer is the container a pod's gets from skiffd, made by hand
// under base: CRI's spec (skiffd's runtime package), its output through
// the log driver into a CRI log file, and the files and volume the kubelet
// gives every pod (hosts, hostname, resolv.conf, the termination log, the
// service account token on a tmpfs). undo removes the files and volume.
func podContainer(base, id string, command ...string) (cfg runtime.ContainerConfig, undo func(), err error) {
	dir := filepath.Join(base, id)
	token := filepath.Join(dir, "token")
	if err := os.MkdirAll(token, 0o755); err != nil {
		return cfg, nil, err
	}
	files := map[string]string{"hosts": "127.0.0.1\tlocalhost\n", "hostname": id + "\n", "resolv.conf": "nameserver 127.0.0.53\n", "termination-log": ""}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			os.RemoveAll(dir)
			return cfg, nil, err
		}
	}
	if err := syscall.Mount("tmpfs", token, "tmpfs", 0, "size=1m"); err != nil {
		os.RemoveAll(dir)
		return cfg, nil, err
	}
	undo = func() {
		_ = syscall.Unmount(token, syscall.MNT_DETACH)
		os.RemoveAll(dir)
	}
	if err := os.WriteFile(filepath.Join(token, "token"), []byte("a token"), 0o644); err != nil {
		undo()
		return cfg, nil, err
	}
	return runtime.ContainerConfig{
		ID: id, Image: runtimetest.Image, Command: command, Hostname: id,
		LogPath:   filepath.Join(dir, "0.log"),
		HostsPath: filepath.Join(dir, "hosts"), ResolvConfPath: filepath.Join(dir, "resolv.conf"), HostnamePath: filepath.Join(dir, "hostname"),
		Seccomp: runtime.Seccomp{Type: runtime.SeccompUnconfined},
		Mounts: []runtime.Mount{
			{Source: filepath.Join(dir, "termination-log"), Destination: "/dev/termination-log", Options: []string{"rbind", "rprivate"}},
			{Source: token, Destination: "/var/run/secrets/kubernetes.io/serviceaccount", Options: []string{"rbind", "ro", "rprivate"}},
		},
	}, undo, nil
}

// inParallel calls run n times, parallelism at a time, each with its own
// container ID, and returns how long all took.
func inParallel(b *testing.B, n, parallelism int, run func(id string) error) time.Duration {
	start := time.Now()
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := run(fmt.Sprintf("bench-raw-%d-%d", time.Now().UnixNano(), i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return time.Since(start)
}

// latencyRounds is how many rounds of parallelism pods each measurement
// of BenchmarkPodLatency runs, so that medians and p99 rest on enough
// samples: 20 pods one at a time, 5 rounds of 8 pods at once (with so few
// samples, p99 is the slowest pod: nearest rank).
var latencyRounds = map[int]int{1: 20, 8: 5}

// BenchmarkPodLatency measures, for bare pods created parallelism at a
// time against a real skiffd, (a) the time from the POST of a pod to the
// watch event whose status says its container is running, and (b) the time
// from the moment the test lets the container exit (it blocks reading a
// FIFO on a hostPath volume until the test writes to it) to the watch event
// carrying the terminated state. It reports medians, p90 and p99, and the
// same figures for containers run straight through containerd (the floor):
// create to task started, and FIFO written to the exit received.
//
// Two skiffds run the pods, one on the host's network (as the floor runs
// its containers) and one on the pod network, taking turns round by round
// with the floor and with the pods' containers run straight through
// skiffd's runtime package (alternateLatency); the time spent inside the
// pod network's Setup and Teardown is reported for the latter. Issue 15 item 3's
// bounds (created → running: median ≤ 1.3×, p99 ≤ 2× the floor's) are
// checked for both: a missed one fails the benchmark.
func BenchmarkPodLatency(b *testing.B) {
	for _, parallelism := range []int{1, 8} {
		b.Run(fmt.Sprintf("parallelism-%d", parallelism), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				rounds := latencyRounds[parallelism]
				load := loadAverage()
				floor, podFloor, hostNet, podNet, cni, ops := alternateLatency(b, parallelism, rounds)
				fmt.Printf("pod start latency, parallelism %d (load before %s, after %s):\n", parallelism, load, loadAverage())
				fl := report(b, parallelism, "containerd", floor)
				pf := report(b, parallelism, "pod-containers", podFloor)
				hn := report(b, parallelism, "skiffd-hostnet", hostNet)
				pn := report(b, parallelism, "skiffd-podnet", podNet)
				b.ReportMetric(ms(cni.setup), "cni-setup-ms/pod")
				b.ReportMetric(ms(cni.teardown), "cni-teardown-ms/pod")
				fmt.Printf("  skiffd-podnet: %s\n", cni)
				fmt.Printf("  runtime operations, mean a pod (the kubelet's runtime_operations_duration_seconds; the rest of created→running is skiffd's own): host network %s; pod network %s\n", ops[0], ops[1])
				fmt.Printf("  created→running medians: pods' containers %.2f× containerd's; skiffd over the pods' containers %.2f× (host network), %.2f× (pod network)\n",
					ratio(pf.median, fl.median), ratio(hn.median, pf.median), ratio(pn.median, pf.median))
				var targets []target
				for _, who := range []struct {
					name string
					p    percentile
				}{{"host network", hn}, {"pod network", pn}} {
					targets = append(targets,
						target{name: fmt.Sprintf("created → running at parallelism %d, %s, median over containerd's", parallelism, who.name),
							got: ratio(who.p.median, fl.median), limit: 1.3, unit: "×"},
						target{name: fmt.Sprintf("created → running at parallelism %d, %s, p99 over containerd's", parallelism, who.name),
							got: ratio(who.p.p99, fl.p99), limit: 2, unit: "×"})
				}
				checkTargets(b, targets...)
			}
		})
	}
}

// latencies are the samples of one measurement.
type latencies struct {
	running, exited []time.Duration
}

// percentile holds the figures of one series of samples.
type percentile struct{ median, p90, p99 time.Duration }

// report prints and reports a measurement, and returns its created →
// running figures.
func report(b *testing.B, parallelism int, who string, l latencies) percentile {
	r, e := percentiles(l.running), percentiles(l.exited)
	b.ReportMetric(ms(r.median), who+"-running-median-ms")
	b.ReportMetric(ms(r.p99), who+"-running-p99-ms")
	b.ReportMetric(ms(e.median), who+"-exited-median-ms")
	b.ReportMetric(ms(e.p99), who+"-exited-p99-ms")
	fmt.Printf("  %-15s %d pods: created→running median %s p90 %s p99 %s; exit→status median %s p90 %s p99 %s\n",
		who, len(l.running), r.median.Round(time.Millisecond), r.p90.Round(time.Millisecond), r.p99.Round(time.Millisecond),
		e.median.Round(time.Millisecond), e.p90.Round(time.Millisecond), e.p99.Round(time.Millisecond))
	return r
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// percentiles returns the median, the 90th and the 99th percentile (nearest rank).
func percentiles(d []time.Duration) percentile {
	if len(d) == 0 {
		return percentile{}
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(i, 0)]
	}
	return percentile{rank(0.5), rank(0.9), rank(0.99)}
}

// podTimes is what the watch saw of one pod: running and terminated are
// closed at the first event saying so, runningAt and terminatedAt are
// those events' arrival times.
type podTimes struct {
	running, terminated     chan struct{}
	runningAt, terminatedAt time.Time
}

// alternateLatency measures rounds of parallelism containers straight
// through containerd, the same as pods' containers (podLatency), and as
// pods of two skiffds, one on the host's network and one on the pod
// network, taking turns round by round (who goes first rotates): a machine
// whose speed drifts during the benchmark (another tenant of the host, the
// page cache) would otherwise count against whoever ran last. The skiffd
// not running a round is idle.
func alternateLatency(b *testing.B, parallelism, rounds int) (floor, podFloor, hostNet, podNet latencies, cni cniShare, ops [2]runtimeOperations) {
	host := startSkiffLatency(b, parallelism, true)
	pod := startSkiffLatency(b, parallelism, false)
	runs := []struct {
		round func(r int) latencies
		out   *latencies
	}{{rawLatency(b, parallelism), &floor}, {podLatency(b, parallelism), &podFloor}, {host.round, &hostNet}, {pod.round, &podNet}}
	for r := 0; r < rounds; r++ {
		for k := range runs {
			run := runs[(r+k)%len(runs)]
			got := run.round(r)
			run.out.running = append(run.out.running, got.running...)
			run.out.exited = append(run.out.exited, got.exited...)
		}
	}
	return floor, podFloor, hostNet, podNet, pod.s.cniShare(b), [2]runtimeOperations{readRuntimeOperations(host.s.scrape()), readRuntimeOperations(pod.s.scrape())}
}

// runtimeOperations are the mean durations of the runtime operations on a
// pod's way to running, from skiffd's kubelet_runtime_operations_duration_seconds.
type runtimeOperations struct {
	sandbox, create, start time.Duration
}

func readRuntimeOperations(families map[string]*dto.MetricFamily) runtimeOperations {
	mean := func(op string) time.Duration {
		var sum float64
		var count uint64
		for _, m := range matchingMetrics(families, "kubelet_runtime_operations_duration_seconds", map[string]string{"operation_type": op}) {
			sum += m.GetHistogram().GetSampleSum()
			count += m.GetHistogram().GetSampleCount()
		}
		if count == 0 {
			return 0
		}
		return time.Duration(sum / float64(count) * float64(time.Second))
	}
	return runtimeOperations{sandbox: mean("run_podsandbox"), create: mean("create_container"), start: mean("start_container")}
}

func (o runtimeOperations) String() string {
	return fmt.Sprintf("run_podsandbox %.1f ms, create_container %.1f ms, start_container %.1f ms", ms(o.sandbox), ms(o.create), ms(o.start))
}

// skiffLatency runs rounds of latency pods against one skiffd.
type skiffLatency struct {
	b           *testing.B
	s           *skiffd
	parallelism int
	hostNetwork bool
	gates       string
	ctx         context.Context
	mu          sync.Mutex
	pods        map[string]*podTimes
}

// startSkiffLatency starts a skiffd and the watch that times its pods.
func startSkiffLatency(b *testing.B, parallelism int, hostNetwork bool) *skiffLatency {
	s := newSkiffd(b)
	s.start()
	s.waitPodNetworkPool(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	l := &skiffLatency{b: b, s: s, parallelism: parallelism, hostNetwork: hostNetwork, gates: b.TempDir(), ctx: ctx, pods: map[string]*podTimes{}}
	w, err := s.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "bench=latency"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			now := time.Now()
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || len(pod.Status.ContainerStatuses) == 0 {
				continue
			}
			l.mu.Lock()
			pt := l.pods[pod.Name]
			l.mu.Unlock()
			if pt == nil {
				continue
			}
			st := pod.Status.ContainerStatuses[0].State
			if st.Running != nil && pt.runningAt.IsZero() {
				pt.runningAt = now
				close(pt.running)
			}
			if st.Terminated != nil && pt.terminatedAt.IsZero() {
				pt.terminatedAt = now
				close(pt.terminated)
			}
		}
	}()
	return l
}

// round runs round r's pods, parallelism at once.
func (l *skiffLatency) round(r int) latencies {
	var wg sync.WaitGroup
	results := make(chan [2]time.Duration, l.parallelism)
	errs := make(chan error, l.parallelism)
	names := make([]string, l.parallelism)
	for i := range names {
		name := fmt.Sprintf("lat-%d-%d", r, i)
		names[i] = name
		pt := &podTimes{running: make(chan struct{}), terminated: make(chan struct{})}
		l.mu.Lock()
		l.pods[name] = pt
		l.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			run, exit, err := skiffPod(l.ctx, l.s, l.gates, name, pt, l.hostNetwork)
			if err != nil {
				errs <- fmt.Errorf("pod %s: %w", name, err)
				return
			}
			results <- [2]time.Duration{run, exit}
		}()
	}
	wg.Wait()
	close(errs)
	close(results)
	for err := range errs {
		l.b.Fatal(err)
	}
	var out latencies
	for res := range results {
		out.running = append(out.running, res[0])
		out.exited = append(out.exited, res[1])
	}
	l.settle(names)
	return out
}

// settle deletes a round's pods and waits until nothing of them is left
// (containers, snapshots, shims, log drivers, networks, directories) and
// the pool of pod networks is full again. The floor's round ends once its
// containers are deleted; without this, skiffd's teardown of its round
// (after the pods' final status, off the pods' path) would run in the
// next round, another's, and count against it.
func (l *skiffLatency) settle(names []string) {
	for _, name := range names {
		err := l.s.client.CoreV1().Pods("default").Delete(l.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
		if err != nil && !apierrors.IsNotFound(err) {
			l.b.Fatal(err)
		}
	}
	waitFor(l.b, time.Minute, "the round's pods gone", func() (bool, error) {
		return len(l.s.leftovers()) == 0 && l.s.poolFull(), nil
	})
}

// skiffPod creates one pod that waits on its FIFO, waits until the watch
// saw it running, lets it exit and waits until the watch saw it terminated.
func skiffPod(ctx context.Context, s *skiffd, gates, name string, pt *podTimes, hostNetwork bool) (run, exit time.Duration, err error) {
	fifo := filepath.Join(gates, name)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return 0, 0, err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"bench": "latency"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			HostNetwork:                   hostNetwork,
			TerminationGracePeriodSeconds: ptr(int64(1)),
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox:1.35",
				Command:      []string{"sh", "-c", "read x < /gate/" + name},
				VolumeMounts: []corev1.VolumeMount{{Name: "gate", MountPath: "/gate"}},
			}},
			Volumes: []corev1.Volume{{Name: "gate", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: gates}}}},
		},
	}
	timeout := time.After(5 * time.Minute)
	posted := time.Now()
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return 0, 0, err
	}
	select {
	case <-pt.running:
	case <-timeout:
		return 0, 0, errors.New("not running after 5m")
	}
	run = pt.runningAt.Sub(posted)
	released, err := release(fifo)
	if err != nil {
		return 0, 0, err
	}
	select {
	case <-pt.terminated:
	case <-timeout:
		return 0, 0, errors.New("not terminated after 5m")
	}
	return run, pt.terminatedAt.Sub(released), nil
}

// release writes a line to the FIFO a container reads, once the container
// has it open, and returns when the write completed.
func release(fifo string) (time.Time, error) {
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	if _, err := f.Write([]byte("go\n")); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

// rawLatency returns a round of parallelism containers straight through
// containerd, each reading a FIFO: create → task started, FIFO written →
// exit received.
func rawLatency(b *testing.B, parallelism int) (round func(r int) latencies) {
	client, err := containerdclient.New(containerd.Address)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close() })
	ctx := namespaces.WithNamespace(context.Background(), containerd.Namespace)
	image, err := client.GetImage(ctx, runtimetest.Image)
	if err != nil {
		b.Fatal(err)
	}
	return latencyRound(b, parallelism, func(gates, id string) (run, exit time.Duration, err error) {
		return rawPod(ctx, client, image, gates, id)
	})
}

// podLatency is rawLatency with pods' containers (podContainer), made and
// started by skiffd's runtime package.
func podLatency(b *testing.B, parallelism int) (round func(r int) latencies) {
	rt := benchRuntime(b)
	base := b.TempDir()
	return latencyRound(b, parallelism, func(gates, id string) (run, exit time.Duration, retErr error) {
		fifo := filepath.Join(gates, id)
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			return 0, 0, err
		}
		ctx := context.Background()
		start := time.Now()
		cfg, undo, err := podContainer(base, id, "sh", "-c", "read x < /gate/"+id)
		if err != nil {
			return 0, 0, err
		}
		defer undo()
		cfg.Mounts = append(cfg.Mounts, runtime.Mount{Source: gates, Destination: "/gate", Options: []string{"rbind", "rw"}})
		if err := rt.Create(ctx, cfg); err != nil {
			return 0, 0, err
		}
		defer func() {
			if err := rt.Remove(ctx, id); err != nil && retErr == nil {
				retErr = err
			}
		}()
		_, exited, err := rt.Start(ctx, id)
		if err != nil {
			return 0, 0, err
		}
		run = time.Since(start)
		exit, err = letExit(fifo, func() int64 { return int64((<-exited).Code) })
		return run, exit, err
	})
}

// latencyRound returns a round of parallelism containers, each run by
// one (create to running, FIFO written to exit received).
func latencyRound(b *testing.B, parallelism int, one func(gates, id string) (run, exit time.Duration, err error)) func(r int) latencies {
	gates := b.TempDir()
	return func(r int) latencies {
		var out latencies
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make(chan error, parallelism)
		for i := 0; i < parallelism; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprintf("bench-lat-%d-%d-%d", time.Now().UnixNano(), r, i)
				run, exit, err := one(gates, id)
				if err != nil {
					errs <- fmt.Errorf("container %s: %w", id, err)
					return
				}
				mu.Lock()
				out.running = append(out.running, run)
				out.exited = append(out.exited, exit)
				mu.Unlock()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		return out
	}
}

func rawPod(ctx context.Context, client *containerdclient.Client, image containerdclient.Image, gates, id string) (run, exit time.Duration, err error) {
	fifo := filepath.Join(gates, id)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	c, err := client.NewContainer(ctx, id,
		containerdclient.WithNewSnapshot(id, image),
		containerdclient.WithNewSpec(oci.WithImageConfig(image),
			oci.WithProcessArgs("sh", "-c", "read x < /gate/"+id),
			oci.WithMounts([]specs.Mount{{Destination: "/gate", Type: "bind", Source: gates, Options: []string{"rbind", "rw"}}}),
			oci.WithHostNamespace(specs.NetworkNamespace)))
	if err != nil {
		return 0, 0, err
	}
	defer c.Delete(ctx, containerdclient.WithSnapshotCleanup)
	task, err := c.NewTask(ctx, cio.NullIO)
	if err != nil {
		return 0, 0, err
	}
	defer task.Delete(ctx)
	exited, err := task.Wait(ctx)
	if err != nil {
		return 0, 0, err
	}
	if err := task.Start(ctx); err != nil {
		return 0, 0, err
	}
	run = time.Since(start)
	exit, err = letExit(fifo, func() int64 { return int64((<-exited).ExitCode()) })
	return run, exit, err
}

// letExit lets the container blocked on fifo exit and returns the time
// from the write to the exit wait's return; wait returns the exit code,
// which must be 0.
func letExit(fifo string, wait func() int64) (time.Duration, error) {
	released, err := release(fifo)
	if err != nil {
		return 0, err
	}
	code := wait()
	exit := time.Since(released)
	if code != 0 {
		return 0, fmt.Errorf("exit code %d", code)
	}
	return exit, nil
}
