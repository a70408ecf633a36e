//go:build integration

package runtime_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/skiff-sh/skiff/runtime"
)

func TestStopGracefully(t *testing.T) {
	rt := newRuntime(t)
	tests := map[string]struct {
		stopSignal syscall.Signal
		script     string
		want       runtime.ExitStatus
	}{
		// NOTE: a container's PID 1 gets no signal it has no handler for
		// (the kernel's init protection), so the workload traps it.
		"SIGTERM by default": {
			script: `trap "exit 143" TERM; sleep 100 & wait`,
			want:   runtime.ExitStatus{Code: 143, Signal: syscall.SIGTERM},
		},
		"configured stop signal": {
			stopSignal: syscall.SIGUSR1,
			script:     `trap "exit 42" USR1; trap "" TERM; sleep 100 & wait`,
			want:       runtime.ExitStatus{Code: 42},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := newConfig(t, "sh", "-c", tc.script)
			cfg.StopSignal = tc.stopSignal
			exitC := start(t, rt, cfg)
			begin := time.Now()
			if err := rt.Stop(context.Background(), cfg.ID, time.Minute); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(begin); took > 30*time.Second {
				t.Errorf("Stop took %v: the stop signal did not end it", took)
			}
			if diff := cmp.Diff(tc.want, waitExit(t, exitC), ignoreExitTime); diff != "" {
				t.Errorf("exit (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	rt := newRuntime(t)
	cfg := newConfig(t, "sh", "-c", `trap "" TERM; sleep 100 & wait`)
	exitC := start(t, rt, cfg)
	const grace = 500 * time.Millisecond
	begin := time.Now()
	if err := rt.Stop(context.Background(), cfg.ID, grace); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took < grace {
		t.Errorf("Stop took %v, less than the grace period", took)
	}
	want := runtime.ExitStatus{Code: 137, Signal: syscall.SIGKILL}
	if diff := cmp.Diff(want, waitExit(t, exitC), ignoreExitTime); diff != "" {
		t.Errorf("exit (-want,+got):\n%s", diff)
	}
	// Stopping again, and stopping what never existed, is fine.
	for _, id := range []string{cfg.ID, "never-existed"} {
		if err := rt.Stop(context.Background(), id, grace); err != nil {
			t.Errorf("Stop(%s) again: %v", id, err)
		}
	}
}

func TestRemoveIsIdempotent(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()
	cfg := newConfig(t, "sleep", "100")
	start(t, rt, cfg)
	for i := range 2 {
		if err := rt.Remove(ctx, cfg.ID); err != nil {
			t.Fatalf("Remove #%d of a running container: %v", i+1, err)
		}
	}
	if _, err := rt.Wait(ctx, cfg.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Wait after Remove: %v, want ErrNotFound", err)
	}
	// The ID (and its snapshot key) can be used again.
	create(t, rt, cfg)
}

func TestRecovery(t *testing.T) {
	ctx := context.Background()
	before := newRuntime(t)
	running := newConfig(t, "sleep", "100")
	exited := newConfig(t, "sh", "-c", "exit 7")
	created := newConfig(t, "true")
	start(t, before, running)
	waitExit(t, start(t, before, exited))
	create(t, before, created)
	// skiffd stops; the tasks stay with their shims.
	if err := before.Close(); err != nil {
		t.Fatal(err)
	}

	after := newRuntime(t)
	list, err := after.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]runtime.Container{}
	for _, c := range list {
		got[c.ID] = c
	}
	want := map[string]runtime.Container{
		running.ID: {ID: running.ID, State: runtime.StateRunning, RuntimeType: runtime.DefaultRuntimeType},
		exited.ID:  {ID: exited.ID, State: runtime.StateExited, Exit: &runtime.ExitStatus{Code: 7}, RuntimeType: runtime.DefaultRuntimeType},
		created.ID: {ID: created.ID, State: runtime.StateCreated, RuntimeType: runtime.DefaultRuntimeType},
	}
	for id, c := range want {
		gotC := got[id]
		if gotC.Labels[runtime.LabelPodUID] != "uid-"+id || gotC.Labels[runtime.LabelManaged] != "true" {
			t.Errorf("%s labels: %v", id, gotC.Labels)
		}
		if (id == created.ID) != gotC.StartedAt.IsZero() {
			t.Errorf("%s StartedAt = %v", id, gotC.StartedAt)
		}
		if gotC.Exit != nil && gotC.Exit.ExitedAt.Before(gotC.StartedAt) {
			t.Errorf("%s exited at %v, before its start %v", id, gotC.Exit.ExitedAt, gotC.StartedAt)
		}
		opts := cmp.Options{ignoreExitTime, cmpopts.IgnoreFields(runtime.Container{}, "Labels", "StartedAt")}
		if diff := cmp.Diff(c, gotC, opts); diff != "" {
			t.Errorf("%s (-want,+got):\n%s", id, diff)
		}
	}

	// An exited task's status comes at once; a running one is re-attached.
	exitC, err := after.Wait(ctx, exited.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, exitC); st.Code != 7 {
		t.Errorf("recovered exit code %d, want 7", st.Code)
	}
	exitC, err = after.Wait(ctx, running.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := after.Stop(ctx, running.ID, 0); err != nil {
		t.Fatal(err)
	}
	if st := waitExit(t, exitC); st.Code != 137 {
		t.Errorf("re-attached exit code %d, want 137", st.Code)
	}
}

func TestOOMKilled(t *testing.T) {
	rt := newRuntime(t)
	cfg := newConfig(t, "tail", "/dev/zero") // buffers one endless line
	cfg.MemoryLimit = 32 << 20
	st := waitExit(t, start(t, rt, cfg))
	want := runtime.ExitStatus{Code: 137, Signal: syscall.SIGKILL, OOMKilled: true}
	if diff := cmp.Diff(want, st, ignoreExitTime); diff != "" {
		t.Errorf("exit (-want,+got):\n%s", diff)
	}

	// A Runtime that did not see the OOM event still learns of it.
	list, err := newRuntime(t).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.ID == cfg.ID && (c.Exit == nil || !c.Exit.OOMKilled) {
			t.Errorf("after restart: %+v, want OOMKilled", c.Exit)
		}
	}
}
