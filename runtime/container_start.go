package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/errdefs"

	"github.com/skiff-sh/skiff/failpoint"
)

// labelStartedAt records when Start started the task (RFC 3339, nanoseconds),
// for List after a restart.
const labelStartedAt = "io.skiff.container.started-at"

// logDriverArg is the query key of the binary log URI: the shim runs
// `<logDriver> log-driver <arg>` (logs.DriverArg), arg being the log path
// or what WithLogDriverArg makes of it.
const logDriverArg = "log-driver"

// Start creates and starts the task with its stdout/stderr going to the log
// driver, and returns a channel that receives exactly one ExitStatus when the
// task exits. The exit wait is registered before the task starts. The task is
// not deleted on exit: Remove does that once the exit is recorded.
//
// An instance that started before is never started again (ErrStarted). A
// task an interrupted Start left created is started, never deleted: the
// start request that was cut short may still reach its shim, and whichever
// start comes first runs the container, once. When containerd lists no
// task, the shim bundle and runc state of one it lost are removed first.
// Errors of the container itself wrap ErrStartFailed (its task is deleted);
// after a transient one (IsTransient) the task, if containerd made it, is
// left for the caller to Inspect.
func (r *Runtime) Start(ctx context.Context, id string) (startedAt time.Time, exit <-chan ExitStatus, retErr error) {
	defer r.locks.lock(id)()
	ctx = r.withNS(ctx)
	container, labels, task, err := r.startable(ctx, id)
	if err != nil {
		return time.Time{}, nil, err
	}
	if task == nil {
		taskIO, err := r.taskIO(id, labels)
		if err != nil {
			return time.Time{}, nil, err
		}
		defer func() {
			if retErr != nil {
				r.removeStdin(id)
			}
		}()
		if err := r.clearStaleShim(ctx, id); err != nil {
			return time.Time{}, nil, err
		}
		if task, err = container.NewTask(ctx, taskIO); err != nil {
			return time.Time{}, nil, startError(fmt.Errorf("creating task for %q: %w", id, err))
		}
		failpoint.Hit(failpoint.AfterTaskCreate)
	}
	defer func() {
		if retErr != nil && !IsTransient(retErr) {
			dctx, cancel := deferContext(ctx)
			defer cancel()
			if _, err := task.Delete(dctx, withKill); err != nil {
				logger(id).WithError(err).Error("deleting task after failed start")
			}
		}
	}()

	waitCtx, stopWaiting := context.WithCancel(r.ctx)
	statusC, err := task.Wait(waitCtx)
	if err != nil {
		stopWaiting()
		return time.Time{}, nil, fmt.Errorf("waiting for task %q: %w", id, err)
	}
	if err := r.noteStart(id); err != nil {
		stopWaiting()
		return time.Time{}, nil, err
	}
	// NOTE: taken before the start so that a quick exit is never stamped
	// before it (the exit time comes from the shim, on the same clock).
	startedAt = time.Now()
	if err := task.Start(ctx); err != nil && !startedMeanwhile(ctx, task) {
		stopWaiting()
		return time.Time{}, nil, startError(fmt.Errorf("starting task %q: %w", id, err))
	}
	failpoint.Hit(failpoint.AfterTaskStart)
	return startedAt, r.monitor(container, statusC, stopWaiting, startedAt), nil
}

// startable returns id's container, its labels, and the task an
// interrupted Start left created (nil when there is none); ErrStarted when
// the instance started before or is being removed.
func (r *Runtime) startable(ctx context.Context, id string) (containerd.Container, map[string]string, containerd.Task, error) {
	// NOTE: a task's bundle is made before containerd lists the task: with
	// none on disk, no task of id exists nor is being made. With one, it
	// is a task made behind Runtime's back, or what one lost left: the
	// checks below tell.
	if c, ok := r.takeCreated(id); ok && !r.hasTaskLeftovers(id) {
		return c.container, c.labels, nil, nil
	}
	container, err := r.loadContainer(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	// NOTE: LoadContainer has just read the record: its labels need no
	// second round trip.
	info, err := container.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading labels of %q: %w", id, err)
	}
	if info.Labels[labelStartedAt] != "" || info.Labels[labelRemoving] == "true" {
		return nil, nil, nil, fmt.Errorf("starting %q: %w", id, ErrStarted)
	}
	task, err := r.createdTask(ctx, container)
	if err != nil {
		return nil, nil, nil, err
	}
	return container, info.Labels, task, nil
}

// createdTask returns the task an interrupted Start left created (nil when
// there is none, after removing the shim bundle, runc state and shim of a
// task containerd lost). A task that ran is not ours to start: ErrStarted.
func (r *Runtime) createdTask(ctx context.Context, container containerd.Container) (containerd.Task, error) {
	id := container.ID()
	task, err := container.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		if err := r.clearTaskLeftovers(ctx, id, false); err != nil {
			// NOTE: leftovers in the way are the infrastructure's trouble,
			// not the container's: the caller retries.
			if !errors.Is(err, errdefs.ErrAborted) {
				err = fmt.Errorf("%w (%w)", err, errdefs.ErrAborted)
			}
			return nil, fmt.Errorf("clearing what a lost task of %q left: %w", id, err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loading task of %q: %w", id, err)
	}
	status, err := task.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading status of task %q: %w", id, err)
	}
	if r.lostBeforeStart(id, status.Status) {
		// NOTE: the caller reads it again: never started, to be made anew.
		return nil, fmt.Errorf("starting %q: its task was %s before it was started: %w", id, status.Status, errdefs.ErrAborted)
	}
	if status.Status != containerd.Created {
		return nil, fmt.Errorf("starting %q: task %s: %w", id, status.Status, ErrStarted)
	}
	logger(id).Info("starting a task an interrupted start left created")
	return task, nil
}

// startedMeanwhile reports whether task runs or ran although its Start
// failed: an earlier start request, cut short, reached its shim first.
func startedMeanwhile(ctx context.Context, task containerd.Task) bool {
	status, err := task.Status(ctx)
	return err == nil && (status.Status == containerd.Running || status.Status == containerd.Stopped)
}

// Wait re-attaches to a running task (after a daemon restart) and returns the
// same kind of exit channel. If the task already exited, the channel yields
// its status at once. ErrNotFound when there is no such container or task.
func (r *Runtime) Wait(ctx context.Context, id string) (<-chan ExitStatus, error) {
	ctx = r.withNS(ctx)
	container, err := r.loadContainer(ctx, id)
	if err != nil {
		return nil, err
	}
	waitCtx, stopWaiting := context.WithCancel(r.ctx)
	statusC, err := waitTask(ctx, waitCtx, container)
	if err != nil {
		stopWaiting()
		return nil, err
	}
	return r.monitor(container, statusC, stopWaiting, time.Time{}), nil
}

// waitTask loads container's task and registers a wait on it under waitCtx.
func waitTask(ctx, waitCtx context.Context, container containerd.Container) (<-chan containerd.ExitStatus, error) {
	task, err := container.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("task of %q: %w", container.ID(), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("loading task of %q: %w", container.ID(), err)
	}
	statusC, err := task.Wait(waitCtx)
	if err != nil {
		return nil, fmt.Errorf("waiting for task %q: %w", container.ID(), err)
	}
	return statusC, nil
}

// monitor owns the exit of container's task: it turns the first real exit
// from statusC into one ExitStatus on the returned channel. A broken wait
// (containerd restarted) is re-registered until the Runtime closes; a task
// that vanished meanwhile yields UnknownExitCode.
//
// A task Start has just started (startedAt set) gets its start-time label
// here first, off the start's path: the exit, and so the task's deletion
// (Remove, which labels the container removing before it), comes after it.
func (r *Runtime) monitor(container containerd.Container, statusC <-chan containerd.ExitStatus, stop context.CancelFunc, startedAt time.Time) <-chan ExitStatus {
	exitC := make(chan ExitStatus, 1)
	go func() {
		defer stop()
		if !startedAt.IsZero() {
			_, err := container.SetLabels(r.withNS(r.ctx), map[string]string{labelStartedAt: startedAt.Format(time.RFC3339Nano)})
			if err != nil && !errdefs.IsNotFound(err) { // NOTE: removed meanwhile
				// NOTE: the task itself records the start until its exit is
				// recorded; the label only matters once the task is deleted.
				logger(container.ID()).WithError(err).Error("recording start time")
			}
		}
		for backoff := time.Duration(0); ; backoff = nextBackoff(backoff) {
			if statusC != nil {
				st := <-statusC
				if st.Error() == nil {
					exitC <- r.exitStatus(r.ctx, container, st.ExitCode(), st.ExitTime())
					return
				}
				if r.ctx.Err() != nil {
					return
				}
				logger(container.ID()).WithError(st.Error()).Warn("lost the wait on task; re-attaching")
			}
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(backoff):
			}
			var err error
			statusC, err = waitTask(r.ctx, r.ctx, container)
			if errors.Is(err, ErrNotFound) {
				exitC <- ExitStatus{Code: UnknownExitCode, ExitedAt: time.Now()}
				return
			}
			if err != nil {
				logger(container.ID()).WithError(err).Warn("re-attaching to task")
			}
		}
	}()
	return exitC
}

// nextBackoff doubles a retry delay from 100ms up to 5s.
func nextBackoff(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return 100 * time.Millisecond
	case d >= 5*time.Second/2:
		return 5 * time.Second
	default:
		return 2 * d
	}
}

// loadContainer loads container id; ErrNotFound when absent.
func (r *Runtime) loadContainer(ctx context.Context, id string) (containerd.Container, error) {
	container, err := r.client.LoadContainer(ctx, id)
	if errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("container %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("loading container %q: %w", id, err)
	}
	return container, nil
}
