//go:build integration

package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/skiff-sh/skiff/runtime"
)

var ignoreExitTime = cmpopts.IgnoreFields(runtime.ExitStatus{}, "ExitedAt")

func TestEchoHello(t *testing.T) {
	rt := newRuntime(t)
	cfg := newConfig(t, "echo", "hello")
	st := waitExit(t, start(t, rt, cfg))
	if diff := cmp.Diff(runtime.ExitStatus{Code: 0}, st, ignoreExitTime); diff != "" {
		t.Errorf("exit (-want,+got):\n%s", diff)
	}
	if st.ExitedAt.IsZero() {
		t.Error("no exit time")
	}
	if diff := cmp.Diff([]string{"stdout hello"}, logLines(t, rt, cfg)); diff != "" {
		t.Errorf("log (-want,+got):\n%s", diff)
	}
}

func TestExitCode(t *testing.T) {
	rt := newRuntime(t)
	st := waitExit(t, start(t, rt, newConfig(t, "sh", "-c", "echo oops >&2; exit 3")))
	if diff := cmp.Diff(runtime.ExitStatus{Code: 3}, st, ignoreExitTime); diff != "" {
		t.Errorf("exit (-want,+got):\n%s", diff)
	}
}

func TestProcessSemantics(t *testing.T) {
	rt := newRuntime(t)
	tests := map[string]struct {
		command, args, env []string
		workingDir         string
		hostname           string
		want               []string
	}{
		"args replace image cmd": {args: []string{"echo", "only", "args"}, want: []string{"stdout only args"}},
		"command and args": {
			command: []string{"sh", "-c"}, args: []string{"echo $0 $1", "x", "y"},
			want: []string{"stdout x y"},
		},
		"image env with pod env": {
			command: []string{"sh", "-c", "echo $A; echo $PATH"}, env: []string{"A=1"},
			want: []string{"stdout 1", "stdout /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		},
		"pod env replaces image env": {
			command: []string{"sh", "-c", "echo $PATH"}, env: []string{"PATH=/bin"},
			want: []string{"stdout /bin"},
		},
		"default working dir": {command: []string{"pwd"}, want: []string{"stdout /"}},
		"working dir":         {command: []string{"pwd"}, workingDir: "/tmp", want: []string{"stdout /tmp"}},
		"hostname":            {command: []string{"hostname"}, hostname: "job-a-0", want: []string{"stdout job-a-0"}},
		"host resolv.conf ro": {command: []string{"sh", "-c", "echo x >> /etc/resolv.conf || echo ro"}, want: []string{"stderr sh: can't create /etc/resolv.conf: Read-only file system", "stdout ro"}},
		"stdout and stderr": {
			command: []string{"sh", "-c", "echo out; echo err >&2"},
			want:    []string{"stdout out", "stderr err"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := newConfig(t, tc.command...)
			cfg.Args, cfg.Env, cfg.WorkingDir, cfg.Hostname = tc.args, tc.env, tc.workingDir, tc.hostname
			if st := waitExit(t, start(t, rt, cfg)); st.Code != 0 {
				t.Errorf("exit code %d", st.Code)
			}
			got := logLines(t, rt, cfg)
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("output (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestCreateErrors(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()

	absent := newConfig(t, "true")
	absent.Image = "busybox:0.0-absent"
	if err := rt.Create(ctx, absent); !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Errorf("Create with an absent image: %v, want ErrImageNotPresent", err)
	}

	// A duplicate ID fails, and undoing it leaves the first container whole.
	cfg := newConfig(t, "echo", "first")
	create(t, rt, cfg)
	if err := rt.Create(ctx, cfg); err == nil {
		t.Fatal("second Create with the same ID succeeded")
	}
	_, exitC, err := rt.Start(ctx, cfg.ID)
	if err != nil {
		t.Fatalf("starting the first container after a failed duplicate: %v", err)
	}
	if st := waitExit(t, exitC); st.Code != 0 {
		t.Errorf("exit code %d", st.Code)
	}

	if _, _, err := rt.Start(ctx, "no-such-container"); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Start of an unknown container: %v, want ErrNotFound", err)
	}
}

func TestVersion(t *testing.T) {
	v, err := newRuntime(t).Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v, "1.") {
		t.Errorf("version %q", v)
	}
}
