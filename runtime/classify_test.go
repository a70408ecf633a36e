package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/containerd/ttrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestIsTransient(t *testing.T) {
	tests := map[string]struct {
		err  error
		want bool
	}{
		"nil":                  {nil, false},
		"containerd down":      {fmt.Errorf("creating task: %w", errdefs.ErrUnavailable), true},
		"creating task cut":    {fmt.Errorf("creating task: %w", status.Error(codes.Unavailable, "EOF")), true},
		"grpc unavailable":     {status.Error(codes.Unavailable, "connection refused"), true},
		"wrapped grpc timeout": {fmt.Errorf("x: %w", status.Error(codes.DeadlineExceeded, "slow")), true},
		"connection reset":     {fmt.Errorf("deleting task: %w", syscall.ECONNRESET), true},
		"cut stream":           {fmt.Errorf("reading: %w", io.EOF), true},
		"shim gone":            {fmt.Errorf("task: %w", ttrpc.ErrClosed), true},
		"cancelled":            {context.Canceled, true},
		"leftover task":        {fmt.Errorf("task x: %w", errdefs.ErrAlreadyExists), true},
		"fork refused":         {fmt.Errorf("fork/exec: %w", syscall.EAGAIN), true},
		"shim could not start": {errors.New("failed to start shim: start failed: mkdir /run/x: file exists: unknown"), true},
		"runc exec failure": {errors.New(`failed to create shim task: OCI runtime create failed: runc create failed: ` +
			`unable to start container process: exec: "/no/such": stat /no/such: no such file or directory: unknown`), false},
		"classified start failure": {&startFailure{fmt.Errorf("x: %w", errdefs.ErrUnavailable)}, false},
		"not found":                {fmt.Errorf("container: %w", errdefs.ErrNotFound), false},
		"invalid":                  {fmt.Errorf("spec: %w", errdefs.ErrInvalidArgument), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsTransient(tc.err); got != tc.want {
				t.Errorf("IsTransient(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestStartError(t *testing.T) {
	runc := errors.New("failed to create shim task: OCI runtime create failed: exec: no such file")
	err := startError(fmt.Errorf("creating task for %q: %w", "id", runc))
	if !errors.Is(err, ErrStartFailed) || !errors.Is(err, runc) {
		t.Errorf("a runc failure: %v is not ErrStartFailed wrapping the cause", err)
	}
	if err.Error() != `creating task for "id": `+runc.Error() {
		t.Errorf("message changed: %q", err)
	}
	if err := startError(fmt.Errorf("x: %w", errdefs.ErrUnavailable)); errors.Is(err, ErrStartFailed) {
		t.Errorf("containerd unavailable classified as the container's failure: %v", err)
	}
}
