package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet/streaming"
	"github.com/skiff-sh/skiff/logs"
	"github.com/skiff-sh/skiff/runtime"
)

// StreamRuntime is what exec and attach need from the container runtime;
// package runtime's *Runtime implements it.
type StreamRuntime interface {
	Exec(ctx context.Context, id string, cfg runtime.ExecConfig) (int, error)
	AttachStdin(ctx context.Context, id string) (io.WriteCloser, error)
	CloseStdin(ctx context.Context, id string) error
	ResizeTTY(ctx context.Context, id string, size runtime.TerminalSize) error
}

var _ StreamRuntime = (*runtime.Runtime)(nil)

// Streams is the kubelet's streaming half (api.Streams): exec runs a process
// in the container's running instance; attach joins the client to the
// instance's stdin and terminal through the runtime, and to its output by
// following its log file (output never flows through skiffd otherwise, so
// that it outlives skiffd); log writes the log files of the instances a
// /log request asks for (log.go).
type Streams struct {
	rt       StreamRuntime
	store    *db.Store
	logRoot  string
	networks PodNetworks
}

// NewStreams returns the streams of the containers rt runs: the pods are
// read from store, their log files from under logRoot, and port forwards
// reach them through their sandboxes in networks (nil: none is served).
func NewStreams(rt StreamRuntime, store *db.Store, logRoot string, networks PodNetworks) *Streams {
	return &Streams{rt: rt, store: store, logRoot: logRoot, networks: networks}
}

// Exec runs cmd in the running instance of the pod's container.
func (s *Streams) Exec(ctx context.Context, pod *corev1.Pod, container string, cmd []string, sio streaming.IO) (int, error) {
	id, _, err := runningInstance(pod, container)
	if err != nil {
		return 0, err
	}
	code, err := s.rt.Exec(ctx, id, runtime.ExecConfig{
		Args:   cmd,
		TTY:    sio.TTY,
		Stdin:  sio.Stdin,
		Stdout: sio.Stdout,
		Stderr: sio.Stderr,
		Resize: runtimeSizes(ctx, sio.Resize),
	})
	if errors.Is(err, runtime.ErrNotFound) {
		return 0, fmt.Errorf("%w: %w", streaming.ErrContainerNotRunning, err)
	}
	return code, err
}

// Attach joins the client to the running instance of the pod's container
// until the instance's output ends (it exited) or ctx does.
//
// Output comes from the instance's log file, what it writes from now on,
// each piece as soon as the log driver writes it (a prompt shows before its
// line ends), through log rotations; stdout and stderr both go to the client's
// stdout (or its stderr when it asked for that alone). Stdin goes to the
// instance's stdin when the container has one (spec stdin with a TTY: see
// runtime's stdin.go); with stdinOnce, the first session that ends its
// stdin closes the container's.
func (s *Streams) Attach(ctx context.Context, pod *corev1.Pod, container string, sio streaming.IO) error {
	id, attempt, err := runningInstance(pod, container)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// NOTE: output is what the instance writes from now on; taking it by
	// time rather than from the file's current end means no output caused
	// by the client's first input can slip in before the file is read.
	opts := logs.Options{Since: time.Now(), Live: true}
	spec, _ := kube.FindContainer(&pod.Spec, container)
	log := logrus.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name, "container": container})
	opts.Skipped = func(file string, err error) { log.WithField("path", file).WithError(err).Error("skipping log line") }
	switch {
	case sio.Stdin != nil && spec != nil && spec.Stdin:
		go s.forwardStdin(ctx, id, sio.Stdin, spec.StdinOnce, log)
	case sio.Stdin != nil:
		go drain(sio.Stdin)
	}
	if sio.Resize != nil {
		go s.forwardResizes(ctx, id, sio.Resize, log)
	}
	path := kube.ContainerLogPath(s.logRoot, pod, container, attempt)
	// NOTE: Write drains a followed file until its writer, the log driver,
	// lets go of it: when the instance's output ends.
	follow := &logs.Follow{Next: func(context.Context, int) (string, bool) { return "", false }}
	err = logs.Write(ctx, attachOutput(sio), path, attempt, opts, follow)
	if ctx.Err() != nil {
		return nil // the client went away, or the server is stopping
	}
	return err
}

// forwardStdin copies the client's stdin to the instance's until the client
// ends it or the session goes.
func (s *Streams) forwardStdin(ctx context.Context, id string, in io.Reader, once bool, log *logrus.Entry) {
	w, err := s.rt.AttachStdin(ctx, id)
	if err != nil {
		log.WithError(err).Debug("attach without stdin")
		drain(in)
		return
	}
	if _, err := io.Copy(w, in); err != nil {
		log.WithError(err).Debug("attach stdin ended")
	}
	if err := w.Close(); err != nil {
		log.WithError(err).Debug("closing attached stdin")
	}
	if once {
		if err := s.rt.CloseStdin(context.WithoutCancel(ctx), id); err != nil {
			log.WithError(err).Warn("closing stdin (stdinOnce)")
		}
	}
}

// drain reads and drops a client's stdin that goes nowhere.
// NOTE: over WebSocket, unread stdin would hold up every other frame of
// the session (resizes, the close signal).
func drain(in io.Reader) {
	_, _ = io.Copy(io.Discard, in)
}

// forwardResizes applies the client's terminal sizes to the instance's TTY.
func (s *Streams) forwardResizes(ctx context.Context, id string, sizes <-chan streaming.TerminalSize, log *logrus.Entry) {
	for size := range runtimeSizes(ctx, sizes) {
		if err := s.rt.ResizeTTY(ctx, id, size); err != nil {
			log.WithError(err).Debug("resizing the terminal")
		}
	}
}

// runtimeSizes converts the API's terminal sizes to the runtime's.
func runtimeSizes(ctx context.Context, in <-chan streaming.TerminalSize) <-chan runtime.TerminalSize {
	if in == nil {
		return nil
	}
	out := make(chan runtime.TerminalSize)
	go func() {
		defer close(out)
		for size := range in {
			select {
			case out <- runtime.TerminalSize{Width: size.Width, Height: size.Height}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// attachOutput is where an attach session's output goes: the client's
// stdout, else its stderr, else nowhere; with a TTY, newlines become CRLF
// again (the log keeps lines without the terminal's carriage return, and
// the client's terminal is raw).
func attachOutput(sio streaming.IO) io.Writer {
	var w io.Writer = io.Discard
	switch {
	case sio.Stdout != nil:
		w = sio.Stdout
	case sio.Stderr != nil:
		w = sio.Stderr
	}
	if sio.TTY {
		return crlfWriter{w}
	}
	return w
}

// crlfWriter writes "\r\n" for every "\n".
type crlfWriter struct{ w io.Writer }

func (c crlfWriter) Write(p []byte) (int, error) {
	if _, err := c.w.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush passes a flush on (logs.Write flushes when it has caught up).
func (c crlfWriter) Flush() {
	if f, ok := c.w.(interface{ Flush() }); ok {
		f.Flush()
	}
}

// runningInstance is the containerd ID and attempt of the running instance
// of a container (regular, init or ephemeral), from the pod's status.
func runningInstance(pod *corev1.Pod, container string) (id string, attempt int, err error) {
	cs := kube.PodContainerStatus(&pod.Status, container)
	if cs == nil || cs.State.Running == nil {
		return "", 0, fmt.Errorf("container %q: %w", container, streaming.ErrContainerNotRunning)
	}
	id, ok := kube.ParseContainerID(cs.ContainerID)
	if !ok {
		return "", 0, fmt.Errorf("container %q: %w", container, streaming.ErrContainerNotRunning)
	}
	return id, int(cs.RestartCount), nil
}
