package runtime

import (
	"context"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/errdefs"
)

// killWait bounds how long a deletion waits for the exit of the process it
// killed (a variable for tests).
var killWait = 10 * time.Second

// withKill is containerd.WithProcessKill with its wait for the exit
// bounded: a task whose creation a containerd restart cut short can be
// left in status "unknown", killed without ever reporting an exit, and
// WithProcessKill then waits forever (CI's chaos test saw a pod's removal,
// and so its Job, hang). Past killWait the deletion goes on: the shim's
// delete removes the container whatever its process did.
func withKill(ctx context.Context, p containerd.Process) error {
	if p.Pid() == 0 {
		return nil // NOTE: as WithProcessKill: no process to kill
	}
	ctx, cancel := context.WithTimeout(ctx, killWait)
	defer cancel()
	// NOTE: a process that has exited needs no kill, and the kill would
	// cost every pod's removal a runc process (`runc kill --all`): the
	// kernel ended the rest of the process's PID namespace with it, and
	// for a container without one of its own the shim killed the rest
	// before it reported the exit (containerd's ShouldKillAllOnExit).
	if st, err := p.Status(ctx); err == nil && st.Status == containerd.Stopped {
		return nil
	}
	exited, err := p.Wait(ctx)
	if err != nil {
		return err
	}
	if err := p.Kill(ctx, syscall.SIGKILL, containerd.WithKillAll); err != nil {
		if errdefs.IsFailedPrecondition(err) {
			return nil
		}
		if !errdefs.IsNotFound(err) {
			return err
		}
	}
	select {
	case <-exited:
	case <-ctx.Done():
		logger(p.ID()).WithField("waited", killWait).Warn("no exit reported after the kill; deleting the task anyway")
	}
	return nil
}
