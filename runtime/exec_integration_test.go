//go:build integration

package runtime_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/skiff-sh/skiff/runtime"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

func TestExec(t *testing.T) {
	rt := newRuntime(t)
	cfg := newConfig(t, "sleep", "300")
	cfg.Env = []string{"FROM_POD=pod"}
	cfg.User = &runtime.User{UID: 65534}
	start(t, rt, cfg)

	tests := map[string]struct {
		args, env  []string
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		"output and exit code": {
			args: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, wantCode: 3,
			wantStdout: "out\n", wantStderr: "err\n",
		},
		"stdin": {args: []string{"cat"}, stdin: "piped\n", wantStdout: "piped\n"},
		"container's user and env, plus exec env": {
			args: []string{"sh", "-c", "id -u; echo $FROM_POD $EXTRA"}, env: []string{"EXTRA=exec"},
			wantStdout: "65534\npod exec\n",
		},
		"unknown command": {args: []string{"no-such-command"}, wantCode: 127, wantStderr: "sh"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			ec := runtime.ExecConfig{Args: tc.args, Env: tc.env, Stdout: &stdout, Stderr: &stderr}
			if tc.stdin != "" {
				ec.Stdin = strings.NewReader(tc.stdin)
			}
			code, err := rt.Exec(context.Background(), cfg.ID, ec)
			if tc.args[0] == "no-such-command" {
				// NOTE: runc fails to start an unknown executable; that is
				// an error, not an exit code.
				if err == nil {
					t.Errorf("exec of an unknown command: code %d, no error", code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d", code, tc.wantCode)
			}
			if diff := cmp.Diff(tc.wantStdout, stdout.String()); diff != "" {
				t.Errorf("stdout (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantStderr, stderr.String()); diff != "" {
				t.Errorf("stderr (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestExecTimeout(t *testing.T) {
	rt := newRuntime(t)
	cfg := newConfig(t, "sleep", "300")
	start(t, rt, cfg)
	// NOTE: long enough for the exec to start even on a loaded machine, so
	// that it is the running process the deadline kills.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	begin := time.Now()
	code, err := rt.Exec(ctx, cfg.ID, runtime.ExecConfig{Args: []string{"sleep", "100"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want DeadlineExceeded", err)
	}
	if code != 137 {
		t.Errorf("exit code %d, want 137 (killed)", code)
	}
	if took := time.Since(begin); took > 30*time.Second {
		t.Errorf("Exec took %v after its deadline", took)
	}
	// The container is unharmed.
	if _, err := rt.PID(context.Background(), cfg.ID); err != nil {
		t.Errorf("container after a timed-out exec: %v", err)
	}
}

func TestExecTTYResize(t *testing.T) {
	rt := newRuntime(t)
	cfg := newConfig(t, "sleep", "300")
	start(t, rt, cfg)

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	resize := make(chan runtime.TerminalSize, 1)
	done := make(chan error, 1)
	go func() {
		// NOTE: the end of stdin hangs the terminal up: the shell ends
		// with SIGHUP (129) or at EOF (0), either is fine.
		_, err := rt.Exec(context.Background(), cfg.ID, runtime.ExecConfig{
			Args: []string{"sh", "-c", "while read x; do stty size; done"}, TTY: true,
			Stdin: stdinR, Stdout: stdoutW, Resize: resize,
		})
		stdoutW.Close()
		done <- err
	}()

	// The resize is applied asynchronously: ask until the shell sees it.
	lines := bufio.NewScanner(stdoutR)
	want, got := "40 100", ""
	for attempt := 0; attempt < 50 && got != want; attempt++ {
		resize <- runtime.TerminalSize{Width: 100, Height: 40}
		if _, err := io.WriteString(stdinW, "\n"); err != nil {
			t.Fatal(err)
		}
		for got = ""; got == "" && lines.Scan(); {
			got = strings.TrimSpace(lines.Text())
		}
	}
	if got != want {
		t.Errorf("stty size = %q, want %q", got, want)
	}
	stdinW.Close()
	go io.Copy(io.Discard, stdoutR)
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("exec did not end after stdin closed")
	}
}

func TestExecNotRunning(t *testing.T) {
	rt := newRuntime(t)
	cfg := newConfig(t, "true")
	waitExit(t, start(t, rt, cfg))
	for _, id := range []string{cfg.ID, "never-existed"} {
		if _, err := rt.Exec(context.Background(), id, runtime.ExecConfig{Args: []string{"true"}}); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("Exec in %s: %v, want ErrNotFound", id, err)
		}
		if _, err := rt.PID(context.Background(), id); !errors.Is(err, runtime.ErrNotFound) {
			t.Errorf("PID of %s: %v, want ErrNotFound", id, err)
		}
	}
}

func TestImageInfo(t *testing.T) {
	rt := newRuntime(t)
	path := os.Getenv(runtimetest.ImageEnv)
	if path == "" {
		path = "../build/busybox-1.35.tar"
	}
	index := readTarFile(t, path, "index.json")
	var idx struct {
		Manifests []struct {
			Digest string
			Size   int64
		}
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		t.Fatal(err)
	}
	info, err := rt.ImageInfo(context.Background(), "busybox:1.35")
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.ImageInfo{
		Ref: runtimetest.Image,
		ID:  "docker.io/library/busybox@" + idx.Manifests[0].Digest,
	}
	if diff := cmp.Diff(want, info, cmpIgnoreSize); diff != "" {
		t.Errorf("image info (-want,+got):\n%s", diff)
	}
	if info.Size <= idx.Manifests[0].Size {
		t.Errorf("size %d: not the whole image", info.Size)
	}
	if _, err := rt.ImageInfo(context.Background(), "busybox:0.0-absent"); !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Errorf("ImageInfo of an absent image: %v, want ErrImageNotPresent", err)
	}
}

var cmpIgnoreSize = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Size" }, cmp.Ignore())
