package runtime

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/events"
	"github.com/containerd/typeurl/v2"
)

// exitStatus describes how container's task ended with code at exitedAt.
func (r *Runtime) exitStatus(ctx context.Context, container containerd.Container, code uint32, exitedAt time.Time) ExitStatus {
	st := ExitStatus{Code: int32(code), ExitedAt: exitedAt, Signal: exitSignal(code)}
	st.OOMKilled = r.hadOOM(ctx, container)
	return st
}

// exitSignal is the signal that killed a process which exited with code.
//
// NOTE: runc reports a process killed by signal n as exit code 128+n, the
// shell's convention; the kubelet reads it the same way (137 = SIGKILL).
// A process exiting with such a code by itself is indistinguishable.
func exitSignal(code uint32) syscall.Signal {
	if code > 128 && code < 128+65 {
		return syscall.Signal(code - 128)
	}
	return 0
}

// hadOOM reports whether the kernel's OOM killer struck in container: from
// containerd's /tasks/oom events while this Runtime watched, else from the
// container's memory cgroup counters (which survive until the task is
// deleted, so an OOM during a daemon restart is still seen).
func (r *Runtime) hadOOM(ctx context.Context, container containerd.Container) bool {
	r.mu.Lock()
	seen := r.oom[container.ID()]
	r.mu.Unlock()
	if seen {
		return true
	}
	spec, err := container.Spec(ctx)
	if err != nil || spec.Linux == nil {
		return false
	}
	return cgroupOOMKills(spec.Linux.CgroupsPath) > 0
}

// forgetOOM drops what the OOM watcher saw of id (on Remove).
func (r *Runtime) forgetOOM(id string) {
	r.mu.Lock()
	delete(r.oom, id)
	r.mu.Unlock()
}

// watchOOM records containers of our namespace that containerd reports OOM
// events for, until ctx ends; a broken subscription is renewed.
func (r *Runtime) watchOOM(ctx context.Context) {
	filter := fmt.Sprintf(`topic=="/tasks/oom",namespace==%q`, r.ns)
	for backoff := time.Duration(0); ; backoff = nextBackoff(backoff) {
		envC, errC := r.client.EventService().Subscribe(ctx, filter)
		err := r.recordOOMs(ctx, envC, errC)
		if ctx.Err() != nil {
			return
		}
		logger("").WithError(err).Warn("OOM event subscription broke; renewing")
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// recordOOMs consumes one event subscription until it fails.
func (r *Runtime) recordOOMs(ctx context.Context, envC <-chan *events.Envelope, errC <-chan error) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errC:
			return err
		case env := <-envC:
			ev, err := typeurl.UnmarshalAny(env.Event)
			if err != nil {
				logger("").WithError(err).Warn("decoding OOM event")
				continue
			}
			if oom, ok := ev.(*apievents.TaskOOM); ok {
				r.mu.Lock()
				r.oom[oom.ContainerID] = true
				r.mu.Unlock()
			}
		}
	}
}

// cgroupOOMKills reads the OOM kill counter of the memory cgroup at
// cgroupsPath (cgroupfs layout; cgroup v1, else v2); 0 when unreadable.
func cgroupOOMKills(cgroupsPath string) int {
	if cgroupsPath == "" || strings.Contains(cgroupsPath, ":") { // systemd "slice:prefix:name"
		return 0
	}
	for _, file := range []string{
		filepath.Join("/sys/fs/cgroup/memory", cgroupsPath, "memory.oom_control"),
		filepath.Join("/sys/fs/cgroup", cgroupsPath, "memory.events"),
	} {
		data, err := os.ReadFile(file)
		if err == nil {
			return oomKillCount(data)
		}
	}
	return 0
}

// oomKillCount parses the "oom_kill N" line of memory.oom_control (v1) or
// memory.events (v2).
func oomKillCount(data []byte) int {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), " ")
		if ok && key == "oom_kill" {
			n, _ := strconv.Atoi(strings.TrimSpace(value))
			return n
		}
	}
	return 0
}
