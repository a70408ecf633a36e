package podworker

import (
	"context"
	"time"

	"github.com/skiff-sh/skiff/runtime"
)

// Runtime is what the pod worker needs from the container runtime; package
// runtime's *Runtime implements it (asserted in package daemon).
type Runtime interface {
	EnsureImage(ctx context.Context, ref string, policy runtime.PullPolicy) error
	EnsureImageWithProgress(ctx context.Context, ref string, policy runtime.PullPolicy, progress func(runtime.Progress)) error
	ImageInfo(ctx context.Context, ref string) (runtime.ImageInfo, error)
	Create(ctx context.Context, cfg runtime.ContainerConfig) error
	Start(ctx context.Context, id string) (time.Time, <-chan runtime.ExitStatus, error)
	Wait(ctx context.Context, id string) (<-chan runtime.ExitStatus, error)
	Exec(ctx context.Context, id string, cfg runtime.ExecConfig) (exitCode int, err error)
	Stop(ctx context.Context, id string, grace time.Duration) error
	Remove(ctx context.Context, id string) error
	List(ctx context.Context) ([]runtime.Container, error)
	Inspect(ctx context.Context, id string) (runtime.Container, error)
	SweepLeftovers(ctx context.Context) error
	PID(ctx context.Context, id string) (uint32, error)
}
