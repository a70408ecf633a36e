package runtime

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/errdefs"
)

// List returns every container in the namespace carrying LabelManaged, with
// its state, and its exit when stopped. A container that cannot be read is
// reported as exited with UnknownExitCode (and logged); it never fails the
// whole List.
func (r *Runtime) List(ctx context.Context) ([]Container, error) {
	ctx = r.withNS(ctx)
	found, err := r.client.Containers(ctx, fmt.Sprintf("labels.%q==true", LabelManaged))
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	list := make([]Container, 0, len(found))
	for _, c := range found {
		list = append(list, r.describe(ctx, c))
	}
	return list, nil
}

// describe reads one container's labels, state and exit.
func (r *Runtime) describe(ctx context.Context, c containerd.Container) Container {
	info, err := c.Info(ctx, containerd.WithoutRefreshedMetadata)
	if err != nil {
		return brokenContainer(c.ID(), nil, err)
	}
	desc := Container{ID: c.ID(), Labels: info.Labels, State: StateCreated}
	if at, err := time.Parse(time.RFC3339Nano, info.Labels[labelStartedAt]); err == nil {
		desc.StartedAt = at
	}
	task, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return desc
	}
	if err != nil {
		return brokenContainer(c.ID(), info.Labels, err)
	}
	status, err := task.Status(ctx)
	if err != nil {
		return brokenContainer(c.ID(), info.Labels, err)
	}
	switch status.Status {
	case containerd.Created:
	case containerd.Running, containerd.Paused, containerd.Pausing:
		desc.State = StateRunning
	case containerd.Stopped:
		exit := r.exitStatus(ctx, c, status.ExitStatus, status.ExitTime)
		desc.State, desc.Exit = StateExited, &exit
	default:
		return brokenContainer(c.ID(), info.Labels, fmt.Errorf("task status %q", status.Status))
	}
	return desc
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
