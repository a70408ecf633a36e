package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/errdefs"
)

// labelRemoving marks a container that never started and whose removal
// began (Remove writes it before it deletes the task): Start refuses it.
const labelRemoving = "io.skiff.container.removing"

// List returns every container in the namespace carrying LabelManaged, with
// its state, and its exit when stopped. It fails as a whole on a transient
// error (IsTransient: containerd restarting), so that no container is
// misreported then; a started container whose shim does not answer is
// reported StateUnknown, so that the others are not held with it; a
// container that cannot be read for another reason is reported as exited
// with UnknownExitCode (and logged).
func (r *Runtime) List(ctx context.Context) ([]Container, error) {
	ctx = r.withNS(ctx)
	found, err := r.client.Containers(ctx, fmt.Sprintf("labels.%q==true", LabelManaged))
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	list := make([]Container, 0, len(found))
	for _, c := range found {
		desc, err := r.describe(ctx, c)
		if errdefs.IsNotFound(err) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, err
		}
		list = append(list, desc)
	}
	return list, nil
}

// Inspect describes container id as List does; ErrNotFound when there is
// no such container.
func (r *Runtime) Inspect(ctx context.Context, id string) (Container, error) {
	ctx = r.withNS(ctx)
	c, err := r.loadContainer(ctx, id)
	if err != nil {
		return Container{}, err
	}
	desc, err := r.describe(ctx, c)
	if errdefs.IsNotFound(err) {
		return Container{}, fmt.Errorf("container %q: %w", id, ErrNotFound)
	}
	if err == nil && desc.State == StateUnknown {
		d := r.unknown.seen(id, time.Now())
		return Container{}, fmt.Errorf("reading task of %q, unanswered for %s: %w", id, d.Round(time.Millisecond), ErrTaskUnknown)
	}
	return desc, err
}

// describe reads one container's labels, state and exit. Errors are
// transient ones, or NotFound when the container went away meanwhile.
func (r *Runtime) describe(ctx context.Context, c containerd.Container) (Container, error) {
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if errdefs.IsNotFound(err) || IsTransient(err) {
		return Container{}, fmt.Errorf("reading container %q: %w", c.ID(), err)
	}
	if err != nil {
		return brokenContainer(c.ID(), nil, err), nil
	}
	desc := Container{ID: c.ID(), Labels: info.Labels, State: StateCreated, RuntimeType: info.Runtime.Name}
	started := info.Labels[labelStartedAt] != ""
	if at, err := time.Parse(time.RFC3339Nano, info.Labels[labelStartedAt]); err == nil {
		desc.StartedAt = at
	}
	var status containerd.Status
	task, err := c.Task(ctx, nil)
	if err == nil {
		status, err = task.Status(ctx)
	}
	switch {
	case errdefs.IsNotFound(err) && started: // NOTE: also a task deleted since c.Task
		desc.State = StateFinished
		return desc, nil
	case errdefs.IsNotFound(err):
		return desc, nil
	case IsTransient(err):
		return Container{}, fmt.Errorf("reading task of %q: %w", c.ID(), err)
	case err != nil:
		return brokenContainer(c.ID(), info.Labels, err), nil
	}
	if !started && r.lostBeforeStart(c.ID(), status.Status) {
		// NOTE: its exit (137) is containerd's cleanup, its "unknown" a
		// shim containerd cannot read: not a run.
		return desc, nil
	}
	if status.Status != containerd.Unknown {
		r.unknown.forget(c.ID())
	} else if d := r.unknown.seen(c.ID(), time.Now()); d < unknownGrace {
		desc.State = StateUnknown
		return desc, nil
	}
	switch status.Status {
	case containerd.Created:
		desc.TaskCreated = true
	case containerd.Running, containerd.Paused, containerd.Pausing:
		desc.State = StateRunning
	case containerd.Stopped:
		exit := r.exitStatus(ctx, c, status.ExitStatus, status.ExitTime)
		desc.State, desc.Exit = StateExited, &exit
	default:
		return brokenContainer(c.ID(), info.Labels, fmt.Errorf("task status %q", status.Status)), nil
	}
	return desc, nil
}

// brokenContainer is how List reports a container it could not read.
func brokenContainer(id string, labels map[string]string, err error) Container {
	logger(id).WithError(err).Error("reading container for recovery; reporting it exited")
	return Container{
		ID:     id,
		Labels: labels,
		State:  StateExited,
		Exit:   &ExitStatus{Code: UnknownExitCode, ExitedAt: time.Now()},
	}
}
