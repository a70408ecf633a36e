//go:build integration

package runtime_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/skiff-sh/skiff/runtime"
)

// attachable is a config with stdin and a TTY running script.
func attachable(t *testing.T, script string) runtime.ContainerConfig {
	t.Helper()
	cfg := newConfig(t, "sh", "-c", script)
	cfg.Stdin, cfg.TTY = true, true
	return cfg
}

// hasLine reports whether a log line, its carriage return trimmed, is want.
func hasLine(lines []string, want string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.TrimSuffix(l, "\r") == want })
}

func TestTTY(t *testing.T) {
	rt := newRuntime(t)
	cfg := newConfig(t, "sh", "-c", "tty; echo $TERM; echo err >&2")
	cfg.TTY = true
	lines := run(t, rt, cfg)
	for _, want := range []string{"stdout /dev/pts/0", "stdout xterm", "stdout err"} {
		if !hasLine(lines, want) {
			t.Errorf("no %q in the log %q", want, lines)
		}
	}
}

func TestAttachStdin(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()
	cfg := attachable(t, `read a; echo "first $a"; read b; echo "second $b"`)
	exitC := start(t, rt, cfg)

	// Two attach sessions in turn: the first one's end is no EOF.
	for _, line := range []string{"one\n", "two\n"} {
		w, err := rt.AttachStdin(ctx, cfg.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, line); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if st := waitExit(t, exitC); st.Code != 0 {
		t.Errorf("exit code %d", st.Code)
	}
	lines := logLines(t, rt, cfg)
	for _, want := range []string{"stdout first one", "stdout second two"} {
		if !hasLine(lines, want) {
			t.Errorf("no %q in the log %q", want, lines)
		}
	}
}

func TestAttachAfterRestart(t *testing.T) {
	ctx := context.Background()
	before := newRuntime(t)
	cfg := attachable(t, `read a; echo "got $a"`)
	start(t, before, cfg)
	if err := before.Close(); err != nil {
		t.Fatal(err)
	}

	after := newRuntime(t)
	exitC, err := after.Wait(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	w, err := after.AttachStdin(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "later\n")
	w.Close()
	if st := waitExit(t, exitC); st.Code != 0 {
		t.Errorf("exit code %d", st.Code)
	}
	if lines := logLines(t, after, cfg); !hasLine(lines, "stdout got later") {
		t.Errorf("log %q", lines)
	}
}

func TestCloseStdin(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()
	cfg := attachable(t, "cat")
	exitC := start(t, rt, cfg)
	w, err := rt.AttachStdin(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "x\n")
	w.Close()
	for range 2 {
		if err := rt.CloseStdin(ctx, cfg.ID); err != nil {
			t.Fatal(err)
		}
	}
	// NOTE: the end of a terminal's input hangs it up: cat ends.
	waitExit(t, exitC)
}

func TestResizeTTY(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()
	cfg := attachable(t, "read x; stty size")
	exitC := start(t, rt, cfg)
	if err := rt.ResizeTTY(ctx, cfg.ID, runtime.TerminalSize{Width: 100, Height: 40}); err != nil {
		t.Fatal(err)
	}
	w, err := rt.AttachStdin(ctx, cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "\n")
	w.Close()
	waitExit(t, exitC)
	if lines := logLines(t, rt, cfg); !hasLine(lines, "stdout 40 100") {
		t.Errorf("log %q", lines)
	}
}

func TestNoStdin(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()
	plain := newConfig(t, "sleep", "300")
	start(t, rt, plain)
	// NOTE: stdin without a TTY cannot pass the binary log driver's shim IO.
	noTTY := newConfig(t, "sleep", "300")
	noTTY.Stdin = true
	start(t, rt, noTTY)
	for _, id := range []string{plain.ID, noTTY.ID, "never-existed"} {
		if _, err := rt.AttachStdin(ctx, id); !errors.Is(err, runtime.ErrNoStdin) {
			t.Errorf("AttachStdin(%s) = %v, want ErrNoStdin", id, err)
		}
	}
	// After the exit, stdin is gone too.
	ended := attachable(t, "true")
	waitExit(t, start(t, rt, ended))
	if _, err := rt.AttachStdin(ctx, ended.ID); !errors.Is(err, runtime.ErrNoStdin) {
		t.Errorf("AttachStdin after exit = %v, want ErrNoStdin", err)
	}
}
