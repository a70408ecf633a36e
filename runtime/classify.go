package runtime

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"

	"github.com/containerd/errdefs"
	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrStartFailed marks an error of the container itself while its task was
// created or started: the OCI runtime could not run its command, mount its
// volumes or apply its configuration. The kubelet shows such an instance
// terminated with reason StartError.
var ErrStartFailed = errors.New("container failed to start")

// startFailure is an error of the container itself: errors.Is(err,
// ErrStartFailed), with the cause's message unchanged.
type startFailure struct{ err error }

func (e *startFailure) Error() string   { return e.err.Error() }
func (e *startFailure) Unwrap() []error { return []error{ErrStartFailed, e.err} }

// startError classifies an error of creating or starting a task: a
// transient one is returned as is, any other is the container's own.
func startError(err error) error {
	if IsTransient(err) {
		return err
	}
	return &startFailure{err}
}

// IsTransient reports whether err is a failure of the infrastructure, not
// of a container: containerd unavailable or restarting, a connection reset
// or cut short, a shim that did not answer in time, a cancelled call, or
// leftovers of an interrupted operation in the way (already exists). The
// operation may be retried once the instance's state has been read again;
// it must never end an instance.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, ErrStartFailed) {
		return false
	}
	switch {
	case errdefs.IsUnavailable(err), errdefs.IsDeadlineExceeded(err), errdefs.IsCanceled(err),
		errdefs.IsAborted(err), errdefs.IsAlreadyExists(err):
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ttrpc.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.EAGAIN):
		return true
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.AlreadyExists:
			return true
		}
	}
	// NOTE: containerd answers a shim that could not be started (its bundle
	// left by an interrupted task, a fork refused under load) with code
	// Unknown and its own wrapper text, and a shim that died mid-call with
	// ttrpc's text: no typed check exists for these. The container's own
	// failures come back as "failed to create shim task: OCI runtime …".
	msg := err.Error()
	return strings.Contains(msg, "failed to start shim") || strings.Contains(msg, ttrpc.ErrClosed.Error())
}
