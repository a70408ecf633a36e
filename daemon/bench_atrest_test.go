//go:build integration

package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/skiff-sh/skiff/daemon"
	"github.com/skiff-sh/skiff/db"
)

// storedJobs is how many finished Jobs, each with its one finished Pod,
// BenchmarkAtRest stores (issue 15 item 4: 10000 Jobs and 10000 Pods).
const storedJobs = 10000

// BenchmarkAtRest measures skiffd at rest and holding many objects:
// resident memory (VmRSS) idle on an empty store and after a restart onto
// a store holding 10000 finished Jobs and their 10000 finished Pods; the
// restart's time from exec to /readyz answering 200; a list of the 10000
// Jobs as JSON and as a Table (the body read whole, median of 5); and the
// latency of creating Jobs one after the other beside them. The objects
// are copies of a Job and its pod that ran through this skiffd, written
// straight into its store while it is stopped (creating 10000 pods through
// containers would take the benchmark an hour). Issue 15 item 4's bounds
// are checked: a missed one fails the benchmark.
func BenchmarkAtRest(b *testing.B) {
	for i := 0; i < b.N; i++ {
		atRest(b)
	}
}

func atRest(b *testing.B) {
	load := loadAverage()
	s := newSkiffd(b)
	started := time.Now()
	s.start()
	idleAtStart := settledRSS(b, s)
	storePath := filepath.Join(s.dataDir, "skiff.db")
	idleAtStartParts := rssOfParts(b, s.cmd.Process.Pid, storePath)
	// NOTE: idle is skiffd's steady state: past start-up (its mappings of
	// the executable's pages only start-up used go 10 s after it serves)
	// and through every loop of its periodic work (heartbeats, sweeps,
	// resyncs, image garbage collection), which maps back what it uses.
	time.Sleep(time.Until(started.Add(steadyAfter)))
	idle := vmRSS(b, s.cmd.Process.Pid)
	idleParts := rssOfParts(b, s.cmd.Process.Pid, storePath)
	saveProfile(b, s, "heap?gc=1", "atrest-idle-heap.pprof")

	// The Job and pod to copy: one that ran, as skiffd stores them.
	job := shJob("seed", "true", 1, 1, 0, corev1.RestartPolicyNever)
	job.Spec.Template.Spec.Containers[0].Command = []string{"true"}
	ctx := context.Background()
	if _, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	done := waitJob(b, s.client, "default", "seed", batchv1.JobComplete, 5*time.Minute)
	pods, err := s.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=seed"})
	if err != nil || len(pods.Items) != 1 {
		b.Fatalf("the seed Job's pods: %v, %v", pods, err)
	}
	s.stop()
	seedStore(b, storePath, done, &pods.Items[0], storedJobs-1)

	began := time.Now()
	s.start()
	restart := time.Since(began)
	storedAtStart := settledRSS(b, s)
	storedAtStartParts := rssOfParts(b, s.cmd.Process.Pid, storePath)
	// NOTE: at rest is past start-up, as for the idle figure: skiffd
	// drops what only its start-up used (the heap its lists freed, its
	// mappings of the store's file they read whole and of the
	// executable's pages) StartupSettle after it serves.
	time.Sleep(time.Until(began.Add(restart + daemon.StartupSettle + time.Second)))
	stored := settledRSS(b, s)
	storedParts := rssOfParts(b, s.cmd.Process.Pid, storePath)
	saveProfile(b, s, "heap?gc=1", "atrest-stored-heap.pprof")
	// NOTE: what the Go runtime gives back on its own once at rest (its
	// scavenger returns freed pages gradually).
	time.Sleep(30 * time.Second)
	storedLater := vmRSS(b, s.cmd.Process.Pid)

	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		saveProfile(b, s, "profile?seconds=8", "atrest-lists-cpu.pprof")
	}()
	jsonList := timeList(b, s, "application/json", storedJobs)
	tableList := timeList(b, s, "application/json;as=Table;v=v1;g=meta.k8s.io,application/json", storedJobs)
	<-profiled
	afterLists := rssOf(b, s.cmd.Process.Pid)
	saveProfile(b, s, "allocs", "atrest-lists-allocs.pprof")
	metricsBefore := scrapeMetrics(b, s)
	creates := percentiles(timeCreates(b, s, 500))
	metricsAfter := scrapeMetrics(b, s)
	writes := histogramDelta(metricsBefore, metricsAfter, `skiff_store_transaction_duration_seconds_bucket{mode="write",`)
	commits := histogramDelta(metricsBefore, metricsAfter, `etcd_disk_backend_commit_duration_seconds_bucket{`)
	// Stopped here, skiffd leaves its objects to the data dir's removal:
	// deleting 20000 of them one by one would take longer than the rest.
	s.stop()

	fmt.Printf("skiffd at rest (load before %s, after %s):\n", load, loadAverage())
	fmt.Printf("  idle, empty store            VmRSS %.1f MiB (%s) %s after start; %.1f MiB (%s) once started\n",
		mib(idle), idleParts, steadyAfter, mib(idleAtStart), idleAtStartParts)
	fmt.Printf("  %d Jobs + %d Pods stored  VmRSS %.1f MiB at rest (%s) %s after the restart; %.1f MiB (%s) once started; %.1f MiB 30 s later, %.1f MiB (anonymous) after the lists\n",
		storedJobs, storedJobs, mib(stored), storedParts, daemon.StartupSettle+time.Second, mib(storedAtStart), storedAtStartParts, mib(storedLater), mib(afterLists))
	fmt.Printf("  restart to ready            %s\n", restart.Round(time.Millisecond))
	fmt.Printf("  list of %d Jobs            JSON %s, Table %s (median of 5)\n", storedJobs, jsonList, tableList)
	fmt.Printf("  create a Job (500 in a row)  median %s p99 %s\n", creates.median.Round(10*time.Microsecond), creates.p99.Round(10*time.Microsecond))
	fmt.Printf("    the store meanwhile: write transactions %s; their commits %s\n", writes, commits)
	b.ReportMetric(mib(idle), "idle-rss-MiB")
	b.ReportMetric(mib(idleParts.anon), "idle-anon-MiB")
	b.ReportMetric(mib(stored), "stored-rss-MiB")
	b.ReportMetric(mib(storedParts.anon), "stored-anon-MiB")
	b.ReportMetric(mib(storedLater), "stored-rss-30s-MiB")
	b.ReportMetric(ms(restart), "restart-ms")
	b.ReportMetric(ms(jsonList.wall), "list-json-ms")
	b.ReportMetric(ms(jsonList.cpu), "list-json-cpu-ms")
	b.ReportMetric(ms(tableList.wall), "list-table-ms")
	b.ReportMetric(ms(jsonList.floor), "list-json-floor-ms")
	b.ReportMetric(ms(tableList.floor), "list-table-floor-ms")
	b.ReportMetric(ms(tableList.cpu), "list-table-cpu-ms")
	b.ReportMetric(ms(creates.p99), "create-p99-ms")
	checkTargets(b,
		target{name: "idle VmRSS", got: mib(idle), limit: 40, unit: " MiB"},
		target{name: fmt.Sprintf("VmRSS with %d Jobs and %d finished Pods stored", storedJobs, storedJobs), got: mib(stored), limit: 150, unit: " MiB"},
		target{name: fmt.Sprintf("list of %d Jobs as JSON", storedJobs), got: ms(jsonList.wall), limit: 100, unit: " ms"},
		target{name: fmt.Sprintf("list of %d Jobs as a Table", storedJobs), got: ms(tableList.wall), limit: 150, unit: " ms"},
		target{name: "Job create p99", got: ms(creates.p99), limit: 10, unit: " ms"},
		target{name: fmt.Sprintf("restart to ready with %d objects", 2*storedJobs), got: ms(restart), limit: 500, unit: " ms"},
	)
}

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// steadyAfter is when, after its start, an idle skiffd's resident memory
// is its steady state's (see atRest): every periodic loop has run, the
// slowest (node status, image garbage collection) every 5 minutes.
const steadyAfter = 5*time.Minute + 30*time.Second

// settledRSS is skiffd's VmRSS once it is at rest: its threads ran or
// waited for a CPU less than 5% of half a second (start-up's lists and
// syncs are done; on a loaded machine, waiting for a CPU is not rest).
func settledRSS(b *testing.B, s *skiffd) int64 {
	pid := s.cmd.Process.Pid
	waitFor(b, 5*time.Minute, "skiffd at rest", func() (bool, error) {
		before := busyTime(b, pid)
		time.Sleep(500 * time.Millisecond)
		return busyTime(b, pid)-before < 25*time.Millisecond, nil
	})
	return vmRSS(b, pid)
}

// busyTime is the time a process's threads have run on a CPU or waited in
// a run queue for one (/proc/<pid>/task/*/schedstat).
func busyTime(b *testing.B, pid int) time.Duration {
	run, wait := schedTimes(b, pid)
	return run + wait
}

// schedTimes are the times a process's threads have run on a CPU and
// waited in a run queue for one (/proc/<pid>/task/*/schedstat).
func schedTimes(b *testing.B, pid int) (run, wait time.Duration) {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(stats) == 0 {
		b.Fatalf("schedstat of %d: %v", pid, err)
	}
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // a thread that just ended
		}
		f := strings.Fields(string(data))
		if len(f) < 2 {
			continue
		}
		r, _ := strconv.ParseInt(f[0], 10, 64)
		w, _ := strconv.ParseInt(f[1], 10, 64)
		run, wait = run+time.Duration(r), wait+time.Duration(w)
	}
	return run, wait
}

// vmRSS is a process's resident memory, file-backed pages (its binary,
// the store's mapping) included, as ps and top show it.
func vmRSS(b *testing.B, pid int) int64 { return procStatus(b, pid, "VmRSS") }

// procStatus is a size field of /proc/<pid>/status (VmRSS, RssAnon,
// RssFile), in bytes.
func procStatus(t testing.TB, pid int, name string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s for pid %d", name, pid)
	return 0
}

// rssParts is where a process's resident memory is: anonymous (its heap,
// stacks, the runtime's), its executable's pages, the store's mapped file
// (bbolt reads through mmap), other files.
type rssParts struct{ anon, binary, store, otherFiles int64 }

func (p rssParts) String() string {
	return fmt.Sprintf("anonymous %.1f MiB, binary %.1f MiB, store file %.1f MiB, other files %.1f MiB",
		mib(p.anon), mib(p.binary), mib(p.store), mib(p.otherFiles))
}

// rssOfParts reads /proc/<pid>/smaps: the resident memory of each mapping.
func rssOfParts(b *testing.B, pid int, storePath string) rssParts {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		b.Fatal(err)
	}
	var parts rssParts
	var file string
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":"):
			file = ""
			if len(f) >= 6 && strings.HasPrefix(f[5], "/") {
				file = f[5]
			}
		case len(f) == 3 && f[0] == "Rss:":
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			switch file {
			case "":
				parts.anon += kb << 10
			case exe:
				parts.binary += kb << 10
			case storePath:
				parts.store += kb << 10
			default:
				parts.otherFiles += kb << 10
			}
		}
	}
	return parts
}

// seedStore writes n copies of a finished Job and its finished pod into a
// stopped skiffd's store, each pair with its own names and UIDs and the pod
// owned by its Job, as the Job controller leaves them.
func seedStore(b *testing.B, path string, job *batchv1.Job, pod *corev1.Pod, n int) {
	store, err := db.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	const batch = 500
	for first := 0; first < n; first += batch {
		err := store.Write(func(tx *db.Tx) error {
			for i := first; i < min(first+batch, n); i++ {
				j, p := job.DeepCopy(), pod.DeepCopy()
				name := fmt.Sprintf("stored-%05d", i)
				uid := types.UID(uuid.NewUUID())
				j.ObjectMeta = cleanMeta(j.ObjectMeta, name, uid)
				j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(uid)
				for _, labels := range []map[string]string{j.Spec.Template.Labels, j.Labels} {
					relabel(labels, name, uid)
				}
				p.ObjectMeta = cleanMeta(p.ObjectMeta, name+"-"+strings.TrimPrefix(pod.Name, "seed-"), types.UID(uuid.NewUUID()))
				relabel(p.Labels, name, uid)
				p.GenerateName = name + "-"
				p.OwnerReferences[0].Name, p.OwnerReferences[0].UID = name, uid
				if err := tx.Create(db.Jobs, j); err != nil {
					return err
				}
				if err := tx.Create(db.Pods, p); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatalf("seeding the store: %v", err)
		}
	}
}

// cleanMeta is meta renamed, with a new UID and nothing the store assigns.
func cleanMeta(meta metav1.ObjectMeta, name string, uid types.UID) metav1.ObjectMeta {
	meta.Name, meta.UID, meta.ResourceVersion = name, uid, ""
	meta.Labels = copyLabels(meta.Labels)
	return meta
}

func copyLabels(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// relabel points a Job's or its pod's job-name and controller-uid labels at
// another Job, in place.
func relabel(labels map[string]string, job string, uid types.UID) {
	for _, k := range []string{batchv1.JobNameLabel, "job-name"} {
		if _, ok := labels[k]; ok {
			labels[k] = job
		}
	}
	for _, k := range []string{batchv1.ControllerUidLabel, "controller-uid"} {
		if _, ok := labels[k]; ok {
			labels[k] = string(uid)
		}
	}
}

// listTimes are a list's median time from the request to the last byte
// read, and the median CPU time skiffd spent on it: on a loaded machine the
// CPU time is what the list costs, the rest is waiting for a CPU. Beside
// them, the medians of the time to the response's headers (skiffd's read
// of the store and its first bytes) and of the CPU the benchmark's own
// process spent as the client (TLS, HTTP/2, the body's buffer).
// floor is the same body's median time from a Go HTTPS server that has
// it in memory (floorList).
type listTimes struct{ wall, cpu, headers, client, floor time.Duration }

func (l listTimes) String() string {
	return fmt.Sprintf("%s (skiffd's CPU %s; headers after %s, the client's CPU %s; floor %s)", l.wall.Round(100*time.Microsecond),
		l.cpu.Round(100*time.Microsecond), l.headers.Round(100*time.Microsecond), l.client.Round(100*time.Microsecond),
		l.floor.Round(100*time.Microsecond))
}

// timeList GETs every Job of the default namespace five times, reading
// each body whole, then measures its floor with the last body.
func timeList(b *testing.B, s *skiffd, accept string, want int) listTimes {
	var took, cpu, headers, client []time.Duration
	var body []byte
	for range 5 {
		ranBefore, _ := schedTimes(b, s.cmd.Process.Pid)
		clientBefore := selfCPU(b)
		req, err := http.NewRequest(http.MethodGet, s.url("/apis/batch/v1/namespaces/default/jobs"), nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Accept", accept)
		start := time.Now()
		resp, err := s.httpClient().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		headers = append(headers, time.Since(start))
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		took = append(took, time.Since(start))
		client = append(client, selfCPU(b)-clientBefore)
		ranAfter, _ := schedTimes(b, s.cmd.Process.Pid)
		cpu = append(cpu, ranAfter-ranBefore)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("listing Jobs: %d %v", resp.StatusCode, err)
		}
		// Every Job in the answer (a Table has one row each): a list cut
		// short would be fast for nothing.
		if got := bytes.Count(body, []byte(`"uid":`)); got < want {
			b.Fatalf("the list (%s) holds %d uids, want at least %d", accept, got, want)
		}
	}
	return listTimes{wall: percentiles(took).median, cpu: percentiles(cpu).median,
		headers: percentiles(headers).median, client: percentiles(client).median, floor: floorList(b, body)}
}

// floorList is a list's floor: its body, made ahead, served from memory
// by a Go HTTPS server over HTTP/2 (as skiffd serves it) to a client like
// the benchmark's, read whole; the median of 5. What skiffd's list takes
// beyond it is skiffd's; the floor itself is the machine's and the
// client's cost of moving the bytes.
func floorList(b *testing.B, body []byte) time.Duration {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()
	var took []time.Duration
	for range 5 {
		start := time.Now()
		resp, err := client.Get(srv.URL)
		if err != nil {
			b.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took = append(took, time.Since(start))
		if err != nil || len(got) != len(body) || resp.ProtoMajor != 2 {
			b.Fatalf("the floor's list: %d of %d bytes over %s, %v", len(got), len(body), resp.Proto, err)
		}
	}
	return percentiles(took).median
}

// selfCPU is the CPU time (user and system) this process has used.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timeCreates creates n suspended Jobs one after the other through the API
// (a JSON body, as kubectl sends) and returns each creation's time.
func timeCreates(b *testing.B, s *skiffd, n int) []time.Duration {
	var took []time.Duration
	for i := range n {
		body := fmt.Sprintf(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"created-%d"},"spec":{"suspend":true,`+
			`"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"busybox:1.35","command":["true"]}]}}}}`, i)
		start := time.Now()
		resp, err := s.httpClient().Post(s.url("/apis/batch/v1/namespaces/default/jobs"), "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		took = append(took, time.Since(start))
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("creating a Job: %s", resp.Status)
		}
	}
	return took
}

// saveProfile writes skiffd's named profile (/debug/pprof/<name>) into the
// directory SKIFF_BENCH_PROFILES names, if it names one: the heap profiles
// BENCHMARKS.md's breakdowns come from (go tool pprof -sample_index=inuse_space).
func saveProfile(b *testing.B, s *skiffd, name, file string) {
	dir := os.Getenv("SKIFF_BENCH_PROFILES")
	if dir == "" {
		return
	}
	// NOTE: b.Error, not b.Fatal: the CPU profile is taken on a goroutine
	// of its own.
	resp, err := s.get("/debug/pprof/" + name)
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Errorf("GET /debug/pprof/%s: %d %v", name, resp.StatusCode, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
		b.Error(err)
	}
}

// scrapeMetrics is skiffd's /metrics.
func scrapeMetrics(b *testing.B, s *skiffd) string {
	resp, err := s.get("/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(data)
}

// histogramSpan is what a Prometheus histogram observed between two
// scrapes: how many, and the buckets holding the median and the 99th
// percentile (their upper bounds).
type histogramSpan struct {
	count       int64
	median, p99 string
}

func (h histogramSpan) String() string {
	return fmt.Sprintf("%d, median ≤ %s s, p99 ≤ %s s", h.count, h.median, h.p99)
}

// histogramDelta is the span of the histogram whose bucket lines begin
// with prefix (the metric's name and labels up to le).
func histogramDelta(before, after, prefix string) histogramSpan {
	buckets := func(text string) (les []string, counts []int64) {
		for line := range strings.Lines(text) {
			rest, ok := strings.CutPrefix(line, prefix)
			if !ok {
				continue
			}
			le, value, ok := strings.Cut(rest, "} ")
			if !ok {
				continue
			}
			n, _ := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			les = append(les, strings.Trim(strings.TrimPrefix(le, "le="), `"`))
			counts = append(counts, n)
		}
		return les, counts
	}
	les, was := buckets(before)
	_, now := buckets(after)
	var h histogramSpan
	if len(les) == 0 || len(was) != len(now) {
		return h
	}
	h.count = now[len(now)-1] - was[len(was)-1]
	for i := range les {
		n := now[i] - was[i]
		if h.median == "" && 2*n >= h.count {
			h.median = les[i]
		}
		if h.p99 == "" && 100*n >= 99*h.count {
			h.p99 = les[i]
		}
	}
	return h
}
