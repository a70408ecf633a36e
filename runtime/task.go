package runtime

import (
	"context"
	"fmt"

	"github.com/containerd/containerd"
	"github.com/containerd/errdefs"
)

// PID returns the host PID of the container's init process (for joining its
// namespaces: /proc/<pid>/ns/pid); ErrNotFound if not running.
func (r *Runtime) PID(ctx context.Context, id string) (uint32, error) {
	ctx = r.withNS(ctx)
	task, err := r.runningTask(ctx, id)
	if err != nil {
		return 0, err
	}
	return task.Pid(), nil
}

// runningTask is the task of container id; ErrNotFound when the container,
// its task, or a running task is missing.
func (r *Runtime) runningTask(ctx context.Context, id string) (containerd.Task, error) {
	container, err := r.loadContainer(ctx, id)
	if err != nil {
		return nil, err
	}
	task, err := container.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("task of %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("loading task of %q: %w", id, err)
	}
	status, err := task.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading status of task %q: %w", id, err)
	}
	if status.Status != containerd.Running {
		return nil, fmt.Errorf("task of %q is %s: %w", id, status.Status, ErrNotFound)
	}
	return task, nil
}
