//go:build integration

package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/logs"
)

// TestLogDriverProcess checks that a running container's output goes
// through skiff-log-driver, the binary beside skiffd (its /proc/<pid>/exe),
// that the process costs what BENCHMARKS.md says (well under what the whole
// skiffd as driver cost: 43 MB RSS, 5.4 MB private), and that it keeps
// writing the log while skiffd is killed and started again, losing no line.
func TestLogDriverProcess(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	pod := runningJobPod(t, s, "counter", corev1.Container{Command: []string{"sh", "-c",
		"i=0; while true; do echo line $i; i=$((i+1)); sleep 0.05; done"}})
	id, ok := strings.CutPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	if !ok {
		t.Fatalf("container ID %q", pod.Status.ContainerStatuses[0].ContainerID)
	}
	var pid int
	waitFor(t, 30*time.Second, "the container's log driver process", func() (bool, error) {
		pid = logDriverPid(s.namespace(), id)
		return pid != 0, nil
	})
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if want := filepath.Join(filepath.Dir(skiffdBin), logs.DriverBinary); err != nil || exe != want {
		t.Fatalf("log driver %d runs %q (%v), want %s", pid, exe, err, want)
	}
	mem := smapsRollup(t, pid)
	t.Logf("log driver pid %d: Rss %d kB, Pss %d kB, private %d kB, anonymous %d kB",
		pid, mem["Rss"], mem["Pss"], mem["Private_Clean"]+mem["Private_Dirty"], mem["Anonymous"])
	// NOTE: the binary's pages are at most its size (3 MB), shared by every
	// driver; the anonymous pages (0.6 MB measured) are each container's.
	if mem["Rss"] > 4<<10 || mem["Anonymous"] > 1536 {
		t.Errorf("log driver memory %v kB: want at most 4 MiB RSS, 1.5 MiB anonymous", mem)
	}

	// The driver belongs to the shim, not to skiffd: it goes on writing
	// while skiffd is away, and /log serves every line after the restart.
	before := logLines(t, s, pod.Name)
	s.kill()
	s.start()
	if logDriverPid(s.namespace(), id) != pid {
		t.Errorf("the log driver %d did not survive skiffd's restart", pid)
	}
	var lines []string
	waitFor(t, 30*time.Second, "log lines written after the restart", func() (bool, error) {
		lines = logLines(t, s, pod.Name)
		return len(lines) > len(before)+20, nil
	})
	for i, line := range lines {
		if line != "line "+strconv.Itoa(i) {
			t.Fatalf("line %d of the log is %q (after %d before the restart)", i, line, len(before))
		}
	}
}

// TestLogsPreviousAttempt checks `logs --previous` through the drivers of
// two attempts of one container: each attempt's driver writes its own file.
func TestLogsPreviousAttempt(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	pod := shPod("twice", corev1.RestartPolicyAlways,
		"if [ -f /data/ran ]; then echo second; exec sleep 3600; fi; touch /data/ran; echo first")
	if _, err := s.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.client, pod.Name, time.Minute, "to run its second attempt", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].State.Running != nil
	})
	podLog := func(previous bool) string {
		rc, err := s.client.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{Previous: previous}).Stream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	waitFor(t, 30*time.Second, "the second attempt's line", func() (bool, error) { return podLog(false) == "second\n", nil })
	if got := podLog(true); got != "first\n" {
		t.Errorf("logs --previous = %q, want the first attempt's %q", got, "first\n")
	}
}

// TestLogDriverMissing checks skiffd refuses to start, saying why, when the
// log driver is not beside it or --log-driver names nothing runnable.
func TestLogDriverMissing(t *testing.T) {
	t.Parallel()
	alone := filepath.Join(t.TempDir(), "skiffd")
	copyFile(t, skiffdBin, alone, 0o755)
	notExec := filepath.Join(t.TempDir(), logs.DriverBinary)
	copyFile(t, filepath.Join(filepath.Dir(skiffdBin), logs.DriverBinary), notExec, 0o644)
	tests := map[string]struct {
		bin   string
		extra []string
		want  string
	}{
		"none beside skiffd": {bin: alone, want: filepath.Join(filepath.Dir(alone), logs.DriverBinary) + ": no such file or directory (make build and make install put skiff-log-driver beside skiffd; --log-driver names another)"},
		"--log-driver missing": {bin: skiffdBin, extra: []string{"--log-driver", "/nonexistent/driver"},
			want: "/nonexistent/driver: no such file or directory"},
		"--log-driver not executable": {bin: skiffdBin, extra: []string{"--log-driver", notExec},
			want: "log driver " + notExec + ": not an executable file"},
	}
	for name, tt := range tests {
		args := append([]string{"--data-dir", t.TempDir(), "--containerd-address", containerd.Address,
			"--listen", freeAddr(t), "--socket", filepath.Join(t.TempDir(), "s.sock")}, tt.extra...)
		out, err := exec.Command(tt.bin, args...).CombinedOutput()
		if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 || !strings.Contains(string(out), tt.want) {
			t.Errorf("%s: skiffd %v, want exit 1 and %q:\n%s", name, err, tt.want, out)
		}
	}
}

// logDriverPid finds the log driver of container id in containerd
// namespace ns (0 if none): the shim starts it as `<driver> log-driver
// <arg>` with CONTAINER_ID and CONTAINER_NAMESPACE in its environment.
func logDriverPid(ns, id string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if args := bytes.Split(cmdline, []byte{0}); len(args) < 2 || string(args[1]) != logs.DriverArg {
			continue
		}
		environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		env := "\x00" + string(environ)
		if strings.Contains(env, "\x00CONTAINER_NAMESPACE="+ns+"\x00") && strings.Contains(env, "\x00CONTAINER_ID="+id+"\x00") {
			return pid
		}
	}
	return 0
}

// smapsRollup reads the kB figures of /proc/<pid>/smaps_rollup by name.
func smapsRollup(t *testing.T, pid int) map[string]int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		t.Fatal(err)
	}
	mem := map[string]int64{}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 3 && f[2] == "kB" {
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("smaps_rollup: %q: %v", line, err)
			}
			mem[strings.TrimSuffix(f[0], ":")] = v
		}
	}
	return mem
}

// logLines is the default namespace pod's log through /log, in lines.
func logLines(t *testing.T, s *skiffd, pod string) []string {
	t.Helper()
	rc, err := s.client.CoreV1().Pods("default").GetLogs(pod, &corev1.PodLogOptions{}).Stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := strings.CutSuffix(string(b), "\n")
	return strings.Split(text, "\n")
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}
