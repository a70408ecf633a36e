package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/errdefs"
)

// execDrainTimeout bounds how long Exec waits, after the process exited, for
// its output to be copied (a background child may hold the pipes open).
const execDrainTimeout = 2 * time.Second

// Exec runs cfg.Args in the running container id and returns its exit code
// when it ends. When ctx ends first the process is killed, and Exec returns
// its exit code with an error wrapping ctx.Err() (probes tell a timeout by
// errors.Is(err, context.DeadlineExceeded)). ErrNotFound when the container
// is not running. The process runs as the container's init does (user,
// capabilities, cwd, env plus cfg.Env). Stdin is read until EOF; the caller
// closes it when Exec returns if it may block.
func (r *Runtime) Exec(ctx context.Context, id string, cfg ExecConfig) (exitCode int, err error) {
	nsCtx := r.withNS(ctx)
	task, err := r.runningTask(nsCtx, id)
	if err != nil {
		return 0, err
	}
	spec, err := task.Spec(nsCtx)
	if err != nil {
		return 0, fmt.Errorf("reading spec of %q: %w", id, err)
	}
	pspec := *spec.Process
	pspec.Args = cfg.Args
	pspec.Env = append(slices.Clone(pspec.Env), cfg.Env...)
	pspec.Terminal = cfg.TTY

	execID, err := newExecID()
	if err != nil {
		return 0, err
	}
	var stdinDone chan struct{}
	if cfg.Stdin != nil {
		stdinDone = make(chan struct{})
		cfg.Stdin = &eofReader{r: cfg.Stdin, done: stdinDone}
	}
	process, err := task.Exec(nsCtx, execID, &pspec, cio.NewCreator(execStreams(cfg)...))
	if err != nil {
		return 0, fmt.Errorf("exec in %q: %w", id, err)
	}
	// NOTE: cleanup, the wait and the kill outlive ctx: a cancelled exec
	// must still be killed, reaped and deleted.
	bg := context.WithoutCancel(nsCtx)
	defer func() {
		dctx, cancel := deferContext(bg)
		defer cancel()
		if _, err := process.Delete(dctx, withKill); err != nil && !errdefs.IsNotFound(err) {
			logger(id).WithError(err).Warn("deleting exec process")
		}
	}()
	waitCtx, stopWaiting := context.WithCancel(bg)
	defer stopWaiting()
	statusC, err := process.Wait(waitCtx)
	if err != nil {
		return 0, fmt.Errorf("waiting for exec in %q: %w", id, err)
	}
	if err := process.Start(nsCtx); err != nil {
		return 0, fmt.Errorf("starting exec in %q: %w", id, err)
	}
	go resizeLoop(waitCtx, process, cfg.Resize)
	if stdinDone != nil {
		go closeStdinAtEOF(waitCtx, process, stdinDone)
	}

	select {
	case st := <-statusC:
		drainIO(ctx, process.IO())
		return execResult(id, st)
	case <-ctx.Done():
		if err := process.Kill(bg, syscall.SIGKILL); err != nil && !errdefs.IsNotFound(err) {
			logger(id).WithError(err).Warn("killing exec process")
		}
		code, _ := execResult(id, <-statusC)
		return code, fmt.Errorf("exec in %q: %w", id, ctx.Err())
	}
}

// execStreams are the cio options for cfg's streams; nil writers discard.
func execStreams(cfg ExecConfig) []cio.Opt {
	stdout, stderr := cfg.Stdout, cfg.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil || cfg.TTY {
		stderr = io.Discard
	}
	opts := []cio.Opt{cio.WithStreams(cfg.Stdin, stdout, stderr)}
	if cfg.TTY {
		opts = append(opts, cio.WithTerminal)
	}
	return opts
}

// execResult is the exit code in st.
func execResult(id string, st containerd.ExitStatus) (int, error) {
	if err := st.Error(); err != nil {
		return UnknownExitCode, fmt.Errorf("exit of exec in %q: %w", id, err)
	}
	return int(st.ExitCode()), nil
}

// drainIO waits (bounded) for the process's output to be copied out.
func drainIO(ctx context.Context, pio cio.IO) {
	done := make(chan struct{})
	go func() {
		pio.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	case <-time.After(execDrainTimeout):
	}
}

// eofReader closes done once r is exhausted (EOF or error).
type eofReader struct {
	r    io.Reader
	done chan struct{}
	once sync.Once
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.done) })
	}
	return n, err
}

// closeStdinAtEOF closes the process's stdin once its source is exhausted.
//
// NOTE: the shim holds the stdin FIFO open for writing itself until CloseIO,
// so the process would never see EOF otherwise (containerd CRI and ctr do
// the same).
func closeStdinAtEOF(ctx context.Context, process containerd.Process, done <-chan struct{}) {
	select {
	case <-ctx.Done():
	case <-done:
		if err := process.CloseIO(ctx, containerd.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
			logger("").WithError(err).Debug("closing exec stdin")
		}
	}
}

// resizeLoop applies terminal sizes from sizes to process until ctx ends.
func resizeLoop(ctx context.Context, process containerd.Process, sizes <-chan TerminalSize) {
	if sizes == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case size, ok := <-sizes:
			if !ok {
				return
			}
			if err := process.Resize(ctx, uint32(size.Width), uint32(size.Height)); err != nil {
				logger("").WithError(err).Debug("resizing exec terminal")
			}
		}
	}
}

// newExecID is a unique exec process ID.
func newExecID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making an exec ID: %w", err)
	}
	return "exec-" + hex.EncodeToString(b), nil
}
