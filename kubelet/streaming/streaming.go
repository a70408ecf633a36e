// Package streaming holds the words of the contract between the API and the
// kubelet's streaming half (api.Streams): the client's streams of an exec or
// attach session, its terminal sizes, a port forward's copying, and what a
// /log request asks of a container's log. The API fills them from the request; the kubelet runs
// them. It is a leaf, so that both can import it while the kubelet never
// imports the API.
package streaming

import (
	"context"
	"errors"
	"io"

	"github.com/skiff-sh/skiff/logs"
)

// IO are the client's streams of one exec or attach session. A nil field
// is a stream the client did not ask for.
type IO struct {
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

// ErrContainerNotRunning: the kubelet was asked to exec or attach in a
// container that has no running process (it ended between the API's check
// and the call).
var ErrContainerNotRunning = errors.New("container not running")

// Forward copies one forwarded connection's client stream to and from a
// port of the pod until either side ends it or ctx ends; it closes stream.
// Its error is the kubelet's words for the client's error stream.
type Forward func(ctx context.Context, port int32, stream io.ReadWriteCloser) error

// LogRequest is what a /log request asks of a container's log.
type LogRequest struct {
	// Previous asks for the instance before the current one.
	Previous bool
	// Follow keeps the stream going, across the container's restarts, until
	// the container ends for good (ignored with Previous).
	Follow bool
	// Options choose what of the instance's file is written (timestamps,
	// tailLines, limitBytes, since). The kubelet sets Skipped itself.
	Options logs.Options
}

// RefusalError is the kubelet's refusal of an exec, attach or port forward
// before any upgrade: the container (or the pod) it names has no running
// process (Code 0: a 500), or the request is malformed (a 400).
// kube-apiserver passes the kubelet's answer on as it came, the code with
// this text alone (clients show "unable to upgrade connection: <text>"),
// except for exec and attach over WebSocket v5, which it translates to SPDY
// itself and so reports after its own upgrade, on the error channel.
type RefusalError struct {
	Code    int
	Message string
}

func (e *RefusalError) Error() string { return e.Message }
