package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/db"
)

func TestIsNoSpace(t *testing.T) {
	tests := map[string]struct {
		err  error
		want bool
	}{
		"nil":                 {nil, false},
		"store":               {fmt.Errorf("creating namespace: %w", db.ErrNoSpace), true},
		"errno":               {&fs.PathError{Op: "write", Path: "f", Err: syscall.ENOSPC}, true},
		"quota":               {syscall.EDQUOT, true},
		"containerd's words":  {errors.New("failed to write blob: write /x: no space left on device: unknown"), true},
		"something else":      {errors.New("invalid tar header"), false},
		"closed":              {db.ErrClosed, false},
		"permission, not all": {&fs.PathError{Op: "open", Path: "f", Err: syscall.EACCES}, false},
	}
	for name, tc := range tests {
		if got := isNoSpace(tc.err); got != tc.want {
			t.Errorf("%s: isNoSpace(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}

// TestStartOrRetry: a step the full disk refuses is retried in the
// background until it is done; any other failure is returned at once.
func TestStartOrRetry(t *testing.T) {
	if retry, err := startOrRetry("ok", func() error { return nil }); retry != nil || err != nil {
		t.Errorf("a step that worked: retry %v, err %v", retry != nil, err)
	}
	bad := errors.New("bad tarball")
	if retry, err := startOrRetry("bad", func() error { return bad }); retry != nil || !errors.Is(err, bad) {
		t.Errorf("a step that failed: retry %v, err %v; want the error", retry != nil, err)
	}
	calls := 0
	retry, err := startOrRetry("full", func() error {
		calls++
		if calls < 3 {
			return db.ErrNoSpace
		}
		return nil
	})
	if retry == nil || err != nil {
		t.Fatalf("a step refused for space: retry %v, err %v; want a retry", retry != nil, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := retry(ctx); err != nil || calls != 3 {
		t.Errorf("retry: %v after %d calls, want nil after 3", err, calls)
	}
}
