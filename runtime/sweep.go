package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/containerd/containerd/api/services/tasks/v1"
	grpcerr "github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/snapshots"
	"github.com/containerd/errdefs"
)

// SweepLeftovers removes what interrupted operations left that belongs to
// no container or no task containerd lists: snapshots Create prepared for a
// container never made, Create's leases, and the shim bundles, runc state,
// shim processes and log drivers of tasks containerd lost track of. An ID
// with a lifecycle operation in progress in this Runtime is left alone.
//
// A task-level leftover is removed only when two successive sweeps found it
// (a task being deleted passes through that state for a moment), so call
// it periodically. Safe for concurrent use with everything else.
func (r *Runtime) SweepLeftovers(ctx context.Context) error {
	ctx = r.withNS(ctx)
	containers, err := r.client.ContainerService().List(ctx)
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	haveContainer := make(map[string]bool, len(containers))
	for _, c := range containers {
		haveContainer[c.ID] = true
	}
	tasksResp, err := r.client.TaskService().List(ctx, &tasks.ListTasksRequest{})
	if err != nil {
		return fmt.Errorf("listing tasks: %w", grpcerr.FromGRPC(err))
	}
	haveTask := make(map[string]bool, len(tasksResp.Tasks))
	for _, t := range tasksResp.Tasks {
		haveTask[t.ID] = true
	}
	return errors.Join(
		r.sweepTasks(ctx, haveTask),
		r.sweepSnapshots(ctx, haveContainer),
		r.sweepLeases(ctx),
	)
}

// sweepTasks clears the task leftovers of IDs without a task that the
// previous sweep found too.
func (r *Runtime) sweepTasks(ctx context.Context, haveTask map[string]bool) error {
	orphans := map[string]bool{}
	procs := scanProcesses(r.ns, r.address)
	for _, ids := range []map[string][]int{procs.shims, procs.logDrivers} {
		for id := range ids {
			orphans[id] = true
		}
	}
	for _, dir := range []string{r.bundleRoot(), runcRoot + "/" + r.ns} {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("reading %s: %w", dir, err)
		}
		for _, e := range entries {
			orphans[strings.TrimPrefix(e.Name(), ".")] = true
		}
	}
	for id := range orphans {
		if haveTask[id] {
			delete(orphans, id)
		}
	}
	r.mu.Lock()
	previous := r.orphanTasks
	r.orphanTasks = orphans
	r.mu.Unlock()

	var errs []error
	for id := range orphans {
		if !previous[id] {
			continue
		}
		unlock, ok := r.locks.tryLock(id)
		if !ok {
			continue
		}
		err := r.clearOrphanTask(ctx, id, procs.logDrivers[id])
		unlock()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// clearOrphanTask clears the task leftovers of id, and kills its log
// drivers, unless a task of id exists now. The caller holds id's lock.
func (r *Runtime) clearOrphanTask(ctx context.Context, id string, logDrivers []int) error {
	_, err := r.client.TaskService().Get(ctx, &tasks.GetRequest{ContainerID: id})
	if err == nil {
		return nil
	}
	if err = grpcerr.FromGRPC(err); !errdefs.IsNotFound(err) {
		return fmt.Errorf("loading task of %q: %w", id, err)
	}
	err = r.clearTaskLeftovers(ctx, id, true)
	if errors.Is(err, errLeftoverYoung) {
		return nil // the next sweep looks again
	}
	errs := []error{err}
	for _, pid := range logDrivers {
		// NOTE: a log driver ends when its container's pipes close; one
		// still there a sweep later lost its writers long ago.
		logger(id).WithField("pid", pid).Info("killing a log driver whose container is gone")
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("killing log driver %d of %q: %w", pid, id, err))
		}
	}
	return errors.Join(errs...)
}

// sweepSnapshots removes managed snapshots that no container uses: Create
// holds the ID's lock from the snapshot until the container exists.
func (r *Runtime) sweepSnapshots(ctx context.Context, haveContainer map[string]bool) error {
	var keys []string
	sn := r.client.SnapshotService(r.snapshotter)
	err := sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive && !haveContainer[info.Name] {
			keys = append(keys, info.Name)
		}
		return nil
	}, fmt.Sprintf("labels.%q==true", LabelManaged))
	if err != nil {
		return fmt.Errorf("listing snapshots: %w", err)
	}
	var errs []error
	for _, key := range keys {
		unlock, ok := r.locks.tryLock(key)
		if !ok {
			continue
		}
		_, err := r.client.LoadContainer(ctx, key)
		if errdefs.IsNotFound(err) {
			logger(key).Info("removing a snapshot no container uses")
			err = sn.Remove(ctx, key)
			if errdefs.IsNotFound(err) {
				err = nil
			}
		}
		unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("removing snapshot %q: %w", key, err))
		}
	}
	return errors.Join(errs...)
}

// sweepLeases deletes Create's leases: Create holds the ID's lock for as
// long as its lease protects a snapshot no container holds yet (a lease
// whose deletion Create left to the background is deleted twice: fine).
func (r *Runtime) sweepLeases(ctx context.Context) error {
	ls := r.client.LeasesService()
	list, err := ls.List(ctx, fmt.Sprintf("id~=%q", "^"+createLease("")))
	if err != nil {
		return fmt.Errorf("listing leases: %w", err)
	}
	var errs []error
	for _, l := range list {
		id := strings.TrimPrefix(l.ID, createLease(""))
		unlock, ok := r.locks.tryLock(id)
		if !ok {
			continue
		}
		if err := ls.Delete(ctx, l); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting lease %q: %w", l.ID, err))
		}
		unlock()
	}
	return errors.Join(errs...)
}
