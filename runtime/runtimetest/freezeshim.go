package runtimetest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// FreezeShim stops (SIGSTOP) the shim serving task id of namespace ns of
// the containerd at address, so that it answers nothing: containerd then
// reports the task's status "unknown", as it does for a task whose shim it
// cannot read (one whose making a containerd restart cut short). thaw
// (SIGCONT) lets it answer again; the test's cleanup thaws it too.
func FreezeShim(t testing.TB, address, ns, id string) (thaw func()) {
	t.Helper()
	pid := shimPID(t, address, ns, id)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("freezing the shim of %s: %v", id, err)
	}
	thawed := false
	thaw = func() {
		if !thawed {
			thawed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)
	return thaw
}

// shimPID finds, in /proc, the running shim of task id: the daemonised one,
// `containerd-shim-runc-v2 -namespace <ns> -id <id> -address <address>`.
func shimPID(t testing.TB, address, ns, id string) int {
	t.Helper()
	want := []string{"-namespace", ns, "-id", id, "-address", address}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == len(want)+1 && strings.HasSuffix(args[0], "containerd-shim-runc-v2") && slices.Equal(args[1:], want) {
			return pid
		}
	}
	t.Fatalf("no shim of task %s in /proc", id)
	return 0
}
