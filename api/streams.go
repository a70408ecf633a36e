package api

import (
	"context"
	"errors"
	"io"

	corev1 "k8s.io/api/core/v1"
)

// Streams runs exec and attach sessions in the containers of this node's
// pods: the kubelet's streaming half. Package daemon implements it over the
// pod worker and the container runtime; the API only sees this interface.
//
// The API has checked, before calling, that the pod has the container and
// that its status shows it running. Both methods return when the session
// ends or ctx ends (the client went away, or the server is shutting down).
type Streams interface {
	// Exec runs cmd in the container and returns its exit code. err is for
	// a failure to run it at all (no such executable, container gone…).
	Exec(ctx context.Context, pod *corev1.Pod, container string, cmd []string, sio StreamIO) (exitCode int, err error)
	// Attach connects sio to the container's main process: stdin (when the
	// container keeps one open), its output from now on, and resizes of
	// its terminal. It returns nil when the process exits.
	Attach(ctx context.Context, pod *corev1.Pod, container string, sio StreamIO) error
}

// StreamIO are the client's streams of one exec or attach session. A nil
// field is a stream the client did not ask for.
type StreamIO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer // always nil with TTY: a terminal has one output
	TTY    bool
	// Resize yields the client's terminal size, first at the start and
	// then on every change; it is closed when the client stops sending.
	// nil without TTY.
	Resize <-chan TerminalSize
}

// TerminalSize is the size of the client's terminal, in characters.
type TerminalSize struct {
	Width  uint16 `json:"Width"`
	Height uint16 `json:"Height"`
}

// ErrContainerNotRunning: Streams was asked for a container that has no
// running process (it ended between the API's check and the call).
var ErrContainerNotRunning = errors.New("container not running")
