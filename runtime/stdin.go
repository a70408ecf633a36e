package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/errdefs"
)

// Labels recording ContainerConfig.Stdin and TTY, which Start and recovery read.
const (
	labelStdin = "io.skiff.container.stdin"
	labelTTY   = "io.skiff.container.tty"
)

// ErrNoStdin: the container has no stdin that can be written (not created
// with Stdin and TTY, stdin closed, or not running).
var ErrNoStdin = errors.New("container has no open stdin")

// errTTYWithoutLog: a TTY's output must go somewhere.
var errTTYWithoutLog = errors.New("a TTY container needs a log path")

// How attach works (the design for `kubectl attach`):
//
//   - Output always goes through the log driver, TTY or not, so it outlives
//     skiffd; attach follows the container's log file from its end.
//   - Input: a container with Stdin and TTY gets a FIFO at
//     <fifo dir>/<namespace>/<id>.stdin, which the shim copies to the
//     terminal. The shim itself holds the FIFO open for writing until
//     CloseIO, so attach sessions come and go (AttachStdin) without the
//     container seeing EOF, and skiffd may restart meanwhile: skiffd holds
//     nothing. CloseStdin (stdinOnce) makes the shim let go; the container's
//     stdin ends once the last attached writer closes too.
//   - The shim (containerd 1.6 and 1.7) copies a stdin FIFO beside a binary
//     log driver only with a terminal: without one the process gets no stdin
//     at all (/dev/null). Stdin without TTY therefore gets no FIFO, and
//     AttachStdin answers ErrNoStdin.

// taskIO is where a task's stdio goes: stdout and stderr to the log driver
// writing the container's log path (nowhere without one), stdin from a FIFO
// for Stdin+TTY containers.
func (r *Runtime) taskIO(id string, labels map[string]string) (cio.Creator, error) {
	logPath, tty := labels[LabelLogPath], labels[labelTTY] == "true"
	if logPath == "" {
		if tty {
			return nil, fmt.Errorf("starting %q: %w", id, errTTYWithoutLog)
		}
		return cio.NullIO, nil
	}
	uri, err := cio.LogURIGenerator("binary", r.logDriver, map[string]string{logDriverArg: r.logArg(logPath)})
	if err != nil {
		return nil, fmt.Errorf("log driver URI for %q: %w", id, err)
	}
	cfg := cio.Config{Stdout: uri.String(), Stderr: uri.String(), Terminal: tty}
	if tty && labels[labelStdin] == "true" {
		if cfg.Stdin, err = r.makeStdin(id); err != nil {
			return nil, err
		}
	}
	return func(string) (cio.IO, error) { return &shimIO{config: cfg}, nil }, nil
}

// shimIO is stdio the shim handles entirely (log driver, FIFO): nothing to
// copy or wait for in skiffd.
type shimIO struct{ config cio.Config }

func (s *shimIO) Config() cio.Config { return s.config }
func (s *shimIO) Cancel()            {}
func (s *shimIO) Wait()              {}
func (s *shimIO) Close() error       { return nil }

// stdinPath is the stdin FIFO of container id.
func (r *Runtime) stdinPath(id string) string {
	return filepath.Join(r.fifoDir, r.ns, id+".stdin")
}

// makeStdin creates id's stdin FIFO and returns its path.
func (r *Runtime) makeStdin(id string) (string, error) {
	path := r.stdinPath(id)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("creating FIFO dir: %w", err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("creating stdin FIFO of %q: %w", id, err)
	}
	return path, nil
}

// CloseStdin closes the container's stdin (stdinOnce): it ends once every
// writer from AttachStdin is closed too. Idempotent.
func (r *Runtime) CloseStdin(ctx context.Context, id string) error {
	ctx = r.withNS(ctx)
	task, err := r.runningTask(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := task.CloseIO(ctx, containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("closing stdin of %q: %w", id, err)
	}
	return nil
}

// AttachStdin returns a writer to the running container's stdin (Stdin and
// TTY containers). Closing it ends this attach session only; ErrNoStdin when
// there is no stdin to write.
func (r *Runtime) AttachStdin(ctx context.Context, id string) (io.WriteCloser, error) {
	if _, err := r.runningTask(r.withNS(ctx), id); errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("attaching to %q: %w", id, ErrNoStdin)
	} else if err != nil {
		return nil, err
	}
	// NOTE: O_NONBLOCK makes the open fail (ENXIO) rather than wait when no
	// shim reads the FIFO; writes still block, through Go's poller.
	f, err := os.OpenFile(r.stdinPath(id), os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENXIO) {
		return nil, fmt.Errorf("attaching to %q: %w", id, ErrNoStdin)
	}
	if err != nil {
		return nil, fmt.Errorf("opening stdin of %q: %w", id, err)
	}
	return f, nil
}

// ResizeTTY sets the terminal size of the container's TTY.
func (r *Runtime) ResizeTTY(ctx context.Context, id string, size TerminalSize) error {
	ctx = r.withNS(ctx)
	task, err := r.runningTask(ctx, id)
	if err != nil {
		return err
	}
	if err := task.Resize(ctx, uint32(size.Width), uint32(size.Height)); err != nil {
		if errdefs.IsNotFound(err) {
			return fmt.Errorf("resizing %q: %w", id, ErrNotFound)
		}
		return fmt.Errorf("resizing %q: %w", id, err)
	}
	return nil
}

// removeStdin removes id's stdin FIFO, if any.
func (r *Runtime) removeStdin(id string) {
	if err := os.Remove(r.stdinPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		logger(id).WithError(err).Warn("removing stdin FIFO")
	}
}
