package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/logs"
)

// driverBinEnv names a log driver to run instead of the one built from this
// package, e.g. an older skiffd (`skiffd log-driver`), to compare with it.
const driverBinEnv = "SKIFF_LOG_DRIVER"

// driverBin is the binary under test: built from this package once per test
// binary, or the one driverBinEnv names. floorBin is testdata/floor, the
// least a driver in Go can be, which the benchmark measures beside it.
var driverBin, floorBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "skiff-log-driver")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	driverBin, floorBin = os.Getenv(driverBinEnv), filepath.Join(dir, "floor")
	builds := map[string]string{floorBin: "./testdata/floor"}
	if driverBin == "" {
		driverBin = filepath.Join(dir, logs.DriverBinary)
		builds[driverBin] = "."
	}
	for bin, pkg := range builds {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", pkg, err)
			return 1
		}
	}
	return m.Run()
}

// driver is a log driver process started the way containerd's shim starts a
// binary logger (containerd's NewBinaryIO): `<bin> log-driver <arg>`, the
// container's stdout and stderr pipes on fds 3 and 4, a ready pipe on fd 5
// that the driver closes, CONTAINER_ID and CONTAINER_NAMESPACE only in its
// environment.
type driver struct {
	cmd       *exec.Cmd
	started   time.Time // just before the exec
	out, errs *os.File  // the container's ends
	ready     *os.File  // the shim's end
	stderr    bytes.Buffer
}

// startDriver starts driver bin for the log arg names; text is in its
// stdout pipe already when it starts.
func startDriver(tb testing.TB, bin, arg, text string) *driver {
	tb.Helper()
	var fds [6]*os.File
	for i := 0; i < len(fds); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			tb.Fatal(err)
		}
		fds[i], fds[i+1] = r, w
	}
	outR, outW, errR, errW, readyR, readyW := fds[0], fds[1], fds[2], fds[3], fds[4], fds[5]
	d := &driver{out: outW, errs: errW, ready: readyR}
	if _, err := outW.WriteString(text); err != nil {
		tb.Fatal(err)
	}
	d.cmd = exec.Command(bin, logs.DriverArg, arg)
	d.cmd.Env = []string{"CONTAINER_ID=c1", "CONTAINER_NAMESPACE=skiff"}
	d.cmd.ExtraFiles = []*os.File{outR, errR, readyW}
	d.cmd.Stderr = &d.stderr
	d.started = time.Now()
	if err := d.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	outR.Close()
	errR.Close()
	readyW.Close()
	tb.Cleanup(func() {
		d.out.Close()
		d.errs.Close()
		d.ready.Close()
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			d.cmd.Wait()
		}
	})
	return d
}

// waitReady blocks, as the shim does, until the driver closes the ready pipe.
func (d *driver) waitReady(tb testing.TB) {
	tb.Helper()
	if n, err := d.ready.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		tb.Fatalf("ready pipe read = %d, %v; want EOF", n, err)
	}
}

// finish closes the container's ends and waits for the driver to exit.
func (d *driver) finish(tb testing.TB) error {
	tb.Helper()
	d.out.Close()
	d.errs.Close()
	return d.cmd.Wait()
}

var criLine = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z (stdout|stderr) ([PF]) (.*)$`)

func TestDriverWritesCRILog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ns_pod_uid", "c", "0.log")
	d := startDriver(t, driverBin, path, "one\n")
	d.waitReady(t)
	if !isLocked(t, path) {
		t.Error("the log file is not locked while the driver runs")
	}
	if _, err := d.errs.WriteString("two\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.out.WriteString("unfinished"); err != nil {
		t.Fatal(err)
	}
	if err := d.finish(t); err != nil {
		t.Fatalf("driver: %v\n%s", err, d.stderr.String())
	}
	if isLocked(t, path) {
		t.Error("the log file is still locked after the driver exited")
	}
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for line := range strings.Lines(string(content)) {
		m := criLine.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			t.Fatalf("not a CRI log line: %q", line)
		}
		got[m[2]] += m[3] + ":" + m[4] + " "
	}
	want := map[string]string{"stdout": "F:one P:unfinished ", "stderr": "F:two "}
	for s := range want {
		if got[s] != want[s] {
			t.Errorf("%s entries = %q, want %q", s, got[s], want[s])
		}
	}
}

// TestDriverRotates checks the rotation policy travels in the argument as
// skiffd writes it (logs.Rotation.Arg).
func TestDriverRotates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	arg := logs.Rotation{MaxSize: 200, MaxFiles: 3}.Arg(path)
	d := startDriver(t, driverBin, arg, strings.Repeat("0123456789012345678901234567890123456789\n", 20))
	d.waitReady(t)
	if err := d.finish(t); err != nil {
		t.Fatalf("driver: %v\n%s", err, d.stderr.String())
	}
	rotated, err := filepath.Glob(path + ".*")
	if err != nil {
		t.Fatal(err)
	}
	if len(rotated) != 2 {
		t.Errorf("rotated files = %q, want 2 (max-files 3)", rotated)
	}
	for _, f := range append(rotated, path) {
		if st, err := os.Stat(f); err != nil || st.Size() > 200 {
			t.Errorf("%s: %v, size over 200", f, err)
		}
	}
}

func TestDriverUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"/tmp/x.log"}, {"log-drivers", "/tmp/x.log"}} {
		var stderr bytes.Buffer
		cmd := exec.Command(driverBin, args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "usage: ") {
			t.Errorf("%q: %v, stderr %q; want exit 2 and the usage", args, err, stderr.String())
		}
	}
}

// TestDriverBadArgument checks that a driver that cannot write still closes
// the ready pipe (the shim would wait for it) and says why.
func TestDriverBadArgument(t *testing.T) {
	d := startDriver(t, driverBin, "relative/0.log", "")
	d.waitReady(t)
	err := d.finish(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(d.stderr.String(), "invalid log driver argument") {
		t.Errorf("exit %v, stderr %q; want 1 and the reason", err, d.stderr.String())
	}
}

// isLocked reports whether a writer holds the exclusive lock on path.
func isLocked(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// BenchmarkDriverProcess measures what one container's log driver costs:
// the time from its exec to the first entry in its file (the line waits in
// the pipe already, as when a container writes at once; the median, which
// a loaded machine disturbs least), and its memory once it wrote it, from
// /proc/<pid>/smaps_rollup: PSS (shared pages split among the processes that
// map them), RSS and private pages. With drivers=N, N run at once, as N
// containers' drivers do: their code pages are shared. The floor is
// testdata/floor measured the same way. SKIFF_LOG_DRIVER=<binary> measures
// another driver in place of skiff-log-driver.
func BenchmarkDriverProcess(b *testing.B) {
	for _, bin := range []string{driverBin, floorBin} {
		for _, n := range []int{1, 3, 20} {
			b.Run(fmt.Sprintf("%s/drivers=%d", filepath.Base(bin), n), func(b *testing.B) {
				benchmarkDrivers(b, bin, n)
			})
		}
	}
}

// benchmarkDrivers measures n drivers bin at once.
func benchmarkDrivers(b *testing.B, bin string, n int) {
	var firstWrites []time.Duration
	var mem memory
	for range b.N {
		t, m := measureDrivers(b, bin, n)
		firstWrites = append(firstWrites, t...)
		mem = mem.add(m)
	}
	slices.Sort(firstWrites)
	runs := float64(b.N * n)
	b.ReportMetric(float64(firstWrites[len(firstWrites)/2].Microseconds())/1000, "ms-to-first-write")
	b.ReportMetric(float64(mem.pss)/runs, "PSS-kB")
	b.ReportMetric(float64(mem.rss)/runs, "RSS-kB")
	b.ReportMetric(float64(mem.private)/runs, "private-kB")
	b.ReportMetric(0, "ns/op")
}

// measureDrivers starts n drivers bin, one after the other, and returns their
// exec-to-first-write times and the sum of their memory once all run.
func measureDrivers(b *testing.B, bin string, n int) ([]time.Duration, memory) {
	dir := b.TempDir()
	var firstWrites []time.Duration
	var mem memory
	drivers := make([]*driver, n)
	for i := range drivers {
		path := filepath.Join(dir, strconv.Itoa(i)+".log")
		if err := logs.Prepare(path); err != nil {
			b.Fatal(err)
		}
		w := watchWrite(b, path)
		drivers[i] = startDriver(b, bin, path, "first line\n")
		firstWrites = append(firstWrites, w.wait(b).Sub(drivers[i].started))
		drivers[i].waitReady(b)
	}
	for _, d := range drivers {
		m, err := readMemory(d.cmd.Process.Pid)
		if err != nil {
			b.Fatal(err)
		}
		mem = mem.add(m)
	}
	for _, d := range drivers {
		if err := d.finish(b); err != nil {
			b.Fatalf("driver: %v\n%s", err, d.stderr.String())
		}
	}
	return firstWrites, mem
}

// writeWatch sees the first write to a file through inotify.
type writeWatch struct{ fd int }

func watchWrite(b *testing.B, path string) *writeWatch {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_MODIFY); err != nil {
		syscall.Close(fd)
		b.Fatal(err)
	}
	return &writeWatch{fd: fd}
}

// wait blocks until the file is written and returns when. It ends the watch.
func (w *writeWatch) wait(b *testing.B) time.Time {
	defer syscall.Close(w.fd)
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(w.fd, buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			b.Fatalf("inotify read: %d, %v", n, err)
		}
		return time.Now()
	}
}

// memory is a process's memory in kB, as smaps_rollup gives it.
type memory struct{ rss, pss, private int64 }

func (m memory) add(o memory) memory {
	return memory{m.rss + o.rss, m.pss + o.pss, m.private + o.private}
}

// readMemory reads the memory of process pid from /proc/<pid>/smaps_rollup.
func readMemory(pid int) (memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("smaps_rollup of %d: %q: %w", pid, line, err)
		}
		switch f[0] {
		case "Rss:":
			m.rss = v
		case "Pss:":
			m.pss = v
		case "Private_Clean:", "Private_Dirty:":
			m.private += v
		}
	}
	return m, nil
}
