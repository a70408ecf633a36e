//go:build integration

package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/runtime"
)

// TestStats reads a running container's cgroup through containerd: its
// CPU time grows while it spins, its working set holds the 16 MiB it keeps
// in /dev/shm; once stopped it is exited, with no figures; a container not
// started yet is created.
func TestStats(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()
	spin := newConfig(t, "sh", "-c", "dd if=/dev/zero of=/dev/shm/fill bs=1M count=16 && while :; do :; done")
	exitC := start(t, rt, spin)
	idle := newConfig(t, "true")
	create(t, rt, idle)

	find := func(id string) runtime.ContainerStats {
		t.Helper()
		list, err := rt.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			if c.ID == id {
				return c
			}
		}
		t.Fatalf("Stats lists no container %s", id)
		return runtime.ContainerStats{}
	}
	var first runtime.ContainerStats
	deadline := time.Now().Add(time.Minute)
	for {
		first = find(spin.ID)
		if first.Usage != nil && first.Usage.MemoryWorkingSet >= 16<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the spinning container: %+v %+v", first, first.Usage)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if first.State != runtime.TaskRunning || first.Labels[runtime.LabelPodUID] != "uid-"+spin.ID {
		t.Errorf("the spinning container: %+v", first)
	}
	if ws := first.Usage.MemoryWorkingSet; ws > 64<<20 {
		t.Errorf("working set %d, want 16 MiB and a shell", ws)
	}
	var second runtime.ContainerStats
	for {
		second = find(spin.ID)
		if second.Usage != nil && second.Usage.CPU > first.Usage.CPU && second.Usage.Timestamp.After(first.Usage.Timestamp) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time did not grow: %v then %v", first.Usage, second.Usage)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c := find(idle.ID); c.State != runtime.TaskCreated || c.Usage != nil {
		t.Errorf("the container not started: %+v", c)
	}

	if err := rt.Stop(ctx, spin.ID, 0); err != nil {
		t.Fatal(err)
	}
	waitExit(t, exitC)
	if c := find(spin.ID); c.State != runtime.TaskExited || c.Usage != nil {
		t.Errorf("the stopped container: %+v", c)
	}
}
