package runtimetest

import (
	"syscall"
	"testing"

	"github.com/skiff-sh/skiff/runtime"
)

// FreezeShim stops (SIGSTOP) the shim serving task id of namespace ns of
// the containerd at address, so that it answers nothing: containerd then
// reports the task's status "unknown", as it does for a task whose shim it
// cannot read (one whose making a containerd restart cut short). thaw
// (SIGCONT) lets it answer again; the test's cleanup thaws it too.
func FreezeShim(t testing.TB, address, ns, id string) (thaw func()) {
	t.Helper()
	pids := runtime.ShimPIDs(address, ns, id)
	if len(pids) == 0 {
		t.Fatalf("no shim of task %s in /proc", id)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("freezing the shim of %s: %v", id, err)
		}
	}
	thawed := false
	thaw = func() {
		if !thawed {
			thawed = true
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		}
	}
	t.Cleanup(thaw)
	return thaw
}
