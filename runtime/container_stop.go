package runtime

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/errdefs"

	"github.com/skiff-sh/skiff/failpoint"
)

// Stop sends the stop signal (ContainerConfig.StopSignal, else the image's
// STOPSIGNAL, else SIGTERM), waits up to grace, then SIGKILLs; it returns
// when the task is gone. Not found / already exited = nil.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.withNS(ctx)
	container, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("loading container %q: %w", id, err)
	}
	task, err := container.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("loading task of %q: %w", id, err)
	}
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	exitC, err := task.Wait(waitCtx)
	if err != nil {
		return fmt.Errorf("waiting for task %q: %w", id, err)
	}
	sig, err := containerd.GetStopSignal(ctx, container, syscall.SIGTERM)
	if err != nil {
		return fmt.Errorf("reading stop signal of %q: %w", id, err)
	}

	if exited, err := signal(ctx, task, sig); exited || err != nil {
		return err
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-exitC:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping %q: %w", id, ctx.Err())
	case <-timer.C:
	}

	if exited, err := signal(ctx, task, syscall.SIGKILL); exited || err != nil {
		return err
	}
	select {
	case <-exitC:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("killing %q: %w", id, ctx.Err())
	}
}

// signal sends sig to task; exited reports that the task was already gone.
func signal(ctx context.Context, task containerd.Task, sig syscall.Signal) (exited bool, err error) {
	err = task.Kill(ctx, sig)
	switch {
	case err == nil:
		return false, nil
	case errdefs.IsNotFound(err):
		// NOTE: containerd answers "process already finished" with NotFound.
		return true, nil
	default:
		return false, fmt.Errorf("sending %v to %q: %w", sig, task.ID(), err)
	}
}

// Remove deletes the task (killing it if still alive), the container, its
// snapshot and its lease. Not found = nil. It first labels the container
// removing, so that a Remove cut short is recognised and finished (by
// Remove again, or by the caller's sweep). The caller must have recorded
// the instance's exit before, if it ran: containerd forgets it here.
func (r *Runtime) Remove(ctx context.Context, id string) error {
	defer r.locks.lock(id)()
	return r.remove(r.withNS(ctx), id)
}

// remove is Remove with id's lock held.
func (r *Runtime) remove(ctx context.Context, id string) error {
	r.takeCreated(id)
	container, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return r.removeRest(ctx, id)
	}
	if err != nil {
		return fmt.Errorf("loading container %q: %w", id, err)
	}
	task, err := container.Task(ctx, nil)
	switch {
	case errdefs.IsNotFound(err):
		// NOTE: a task containerd is still making (for an earlier skiffd
		// whose request outlived it) must not find its container gone.
		if age, ok := r.taskLeftoverAge(id); ok && age < minLeftoverAge {
			return fmt.Errorf("removing %q: %w", id, errLeftoverYoung)
		}
		task = nil
	case err != nil:
		return fmt.Errorf("loading task of %q: %w", id, err)
	}
	if err := r.markRemoving(ctx, container); err != nil {
		if errdefs.IsNotFound(err) {
			return r.removeRest(ctx, id)
		}
		return fmt.Errorf("marking %q removing: %w", id, err)
	}
	if task != nil {
		// NOTE: bounded: a shim that stopped answering must cost a retry,
		// not the pod.
		dctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err := task.Delete(dctx, withKill)
		cancel()
		if err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("deleting task of %q: %w", id, err)
		}
	}
	failpoint.Hit(failpoint.BetweenTaskAndContainerDelete)
	// NOTE: WithSnapshotCleanup removes the snapshot before the record.
	if err := container.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("deleting container %q: %w", id, err)
	}
	r.forget(id)
	return nil
}

// markRemoving labels container removing, so that no Start runs it once
// its task is gone. A container whose record already holds its start time
// needs no label: Start refuses it for that, and finds it finished (see
// describe). That is every container that ran, so the write (and
// containerd's fsync of it) is spared on a pod's common path.
func (r *Runtime) markRemoving(ctx context.Context, container containerd.Container) error {
	// NOTE: LoadContainer has just read the record: its labels need no
	// second round trip.
	info, err := container.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return err
	}
	if info.Labels[labelStartedAt] != "" {
		return nil
	}
	_, err = container.SetLabels(ctx, map[string]string{labelRemoving: "true"})
	return err
}

// removeRest removes what may outlive id's container record when a Remove
// or a Create was cut short: its snapshot and its lease.
func (r *Runtime) removeRest(ctx context.Context, id string) error {
	if err := r.client.SnapshotService(r.snapshotter).Remove(ctx, id); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("removing snapshot of %q: %w", id, err)
	}
	if err := r.deleteLease(ctx, id); err != nil {
		return err
	}
	r.forget(id)
	return nil
}

// forget drops what skiffd itself keeps of id: OOM kills seen, the stdin FIFO.
func (r *Runtime) forget(id string) {
	r.forgetOOM(id)
	r.removeStdin(id)
	r.unknown.forget(id)
}
