//go:build integration

package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/logs"
	"github.com/skiff-sh/skiff/runtime"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// env is the private containerd every test here uses.
var env *runtimetest.Env

// TestMain starts a private containerd with the test image. When the shim
// runs this test binary as the log driver, it is the log driver instead.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == logs.DriverArg {
		if err := logs.RunDriver(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(runtimetest.Main(m, func(e *runtimetest.Env, _ string) error {
		env = e
		return nil
	}))
}

// newRuntime connects a Runtime using this test binary as the log driver.
func newRuntime(t *testing.T) *runtime.Runtime {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(context.Background(), env.Address, env.Namespace, exe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

var lastID atomic.Int64

// newConfig is a container config for the test image with a fresh ID and a
// log file in a temporary directory.
//
// NOTE: runc keeps its state per namespace and ID under /run/containerd/runc
// whichever containerd runs it, so IDs must be unique on the machine, not
// only in our private containerd: the PID and a counter make them so.
func newConfig(t *testing.T, command ...string) runtime.ContainerConfig {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		return -1
	}, strings.ToLower(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	id := fmt.Sprintf("%s-%d-%d", name, os.Getpid(), lastID.Add(1))
	return runtime.ContainerConfig{
		ID:      id,
		Image:   "busybox:1.35",
		Command: command,
		LogPath: filepath.Join(t.TempDir(), "0.log"),
		Labels:  map[string]string{runtime.LabelPodUID: "uid-" + id},
	}
}

// create creates cfg's container and removes it when the test ends.
func create(t *testing.T, rt *runtime.Runtime, cfg runtime.ContainerConfig) {
	t.Helper()
	ctx := context.Background()
	if err := rt.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remove(t, cfg.ID) })
}

// remove removes container id through a Runtime of its own (the test's
// may be closed by then).
func remove(t *testing.T, id string) {
	t.Helper()
	rt, err := runtime.New(context.Background(), env.Address, env.Namespace, "/bin/false")
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Remove(context.Background(), id); err != nil {
		t.Errorf("removing %s: %v", id, err)
	}
}

// start creates and starts cfg's container.
func start(t *testing.T, rt *runtime.Runtime, cfg runtime.ContainerConfig) <-chan runtime.ExitStatus {
	t.Helper()
	create(t, rt, cfg)
	startedAt, exitC, err := rt.Start(context.Background(), cfg.ID)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(startedAt) > time.Minute || startedAt.After(time.Now()) {
		t.Errorf("startedAt = %v", startedAt)
	}
	return exitC
}

// waitExit waits (bounded) for the exit on exitC.
func waitExit(t *testing.T, exitC <-chan runtime.ExitStatus) runtime.ExitStatus {
	t.Helper()
	select {
	case st := <-exitC:
		return st
	case <-time.After(time.Minute):
		t.Fatal("no exit within a minute")
		return runtime.ExitStatus{}
	}
}

// logLines removes the container, which ends its log driver, and returns
// each CRI log line in its log as "<stream> <text>".
//
// NOTE: the shim keeps the container's output pipes open until the task is
// deleted, so the driver writes each line as it comes but only exits (and
// drops its flock) on Remove.
func logLines(t *testing.T, rt *runtime.Runtime, cfg runtime.ContainerConfig) []string {
	t.Helper()
	if err := rt.Remove(context.Background(), cfg.ID); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(cfg.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	var lines []string
	partial := map[string]string{} // P entries of a stream, joined until its F entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 4)
		if len(fields) != 4 {
			t.Fatalf("not a CRI log line: %q", sc.Text())
		}
		stream, tag, text := fields[1], fields[2], fields[3]
		if tag == "P" {
			partial[stream] += text
			continue
		}
		lines = append(lines, stream+" "+partial[stream]+text)
		delete(partial, stream)
	}
	return lines
}
