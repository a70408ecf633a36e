//go:build integration

package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuacctRoot is cgroup v1's cpuacct hierarchy: it charges a cgroup's CPU
// to every ancestor as it is used, so a parent keeps the CPU of children
// long removed (each container's cgroup is).
const cpuacctRoot = "/sys/fs/cgroup/cpuacct"

// cpuSplit is where the CPU of one run went, from the machine's total:
// containerd's side (containerd, its shims, the runc processes they run
// and what else they start, such as the log drivers), the containers'
// cgroups (runc init's setup inside the container, then the container's
// own process), skiffd with the children it reaped (the CNI plugins), and
// the rest (the kernel's threads and interrupts, the benchmark's client).
type cpuSplit struct {
	containerd, containers, skiffd time.Duration
	// containerdItself is containerd's process, with the `shim start`
	// processes it waits for: the rest of containerd's side is the shims,
	// their runc processes and what they start.
	containerdItself time.Duration
	machine          machineCPU
	split            bool // false without cgroup v1's cpuacct hierarchy: the machine's total only
}

// cpuMeter reads a cpuSplit's parts.
type cpuMeter struct {
	b                *testing.B
	containerdCgroup string // holds containerd (moveContainerd)
	containersCgroup string // the parent of the containers' cgroups
	skiffdPid        int    // 0 when no skiffd runs
}

func (m cpuMeter) read() cpuSplit {
	if m.containerdCgroup == "" {
		return cpuSplit{machine: readMachineCPU(m.b)}
	}
	r := cpuSplit{
		split:            true,
		containerd:       cgroupCPU(m.b, m.containerdCgroup),
		containerdItself: processTreeCPU(m.b, containerd.Pid()),
		containers:       cgroupCPU(m.b, m.containersCgroup),
		machine:          readMachineCPU(m.b),
	}
	if m.skiffdPid != 0 {
		r.skiffd = processTreeCPU(m.b, m.skiffdPid)
	}
	return r
}

func (c cpuSplit) since(before cpuSplit) cpuSplit {
	return cpuSplit{
		containerd: c.containerd - before.containerd,
		containers: c.containers - before.containers,
		skiffd:     c.skiffd - before.skiffd,
		machine:    c.machine.since(before.machine),
		split:      c.split && before.split,
		// containerd's process is in its cgroup: part of containerd's side.
		containerdItself: c.containerdItself - before.containerdItself,
	}
}

// perPod is the split, a pod's share.
func (c cpuSplit) perPod(pods int) string {
	each := func(d time.Duration) string {
		return fmt.Sprintf("%.1f ms", ms(d/time.Duration(pods)))
	}
	if !c.split {
		return c.machine.perPod(pods)
	}
	rest := c.machine.busy - c.containerd - c.containers - c.skiffd
	return fmt.Sprintf("%s: containerd's side %s (containerd %s, the shims and what they run %s), the containers' cgroups %s, skiffd and its children %s, the rest %s",
		c.machine.perPod(pods), each(c.containerd), each(c.containerdItself), each(c.containerd-c.containerdItself),
		each(c.containers), each(c.skiffd), each(rest))
}

// moveContainerd puts the test's containerd into a cpuacct cgroup of its
// own, so that it, and every shim and runc started from then on, is
// accounted there; the returned func moves it back and removes the cgroup.
// Without cgroup v1's cpuacct hierarchy it moves nothing and answers "".
func moveContainerd(b *testing.B) (cgroup string, restore func()) {
	if _, err := os.Stat(filepath.Join(cpuacctRoot, "cpuacct.usage")); err != nil {
		b.Logf("no split of the CPU by process: %v", err)
		return "", func() {}
	}
	cgroup = "skiff-bench-containerd"
	dir := filepath.Join(cpuacctRoot, cgroup)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	pid := strconv.Itoa(containerd.Pid())
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(pid), 0o644); err != nil {
		b.Fatal(err)
	}
	return cgroup, func() {
		// NOTE: shims started meanwhile stay in the cgroup until they
		// exit; the cgroup is left for them when it cannot be removed.
		_ = os.WriteFile(filepath.Join(cpuacctRoot, "cgroup.procs"), []byte(pid), 0o644)
		_ = os.Remove(dir)
	}
}

// cgroupCPU is a cpuacct cgroup's CPU time; 0 while it does not exist yet.
func cgroupCPU(b *testing.B, cgroup string) time.Duration {
	data, err := os.ReadFile(filepath.Join(cpuacctRoot, cgroup, "cpuacct.usage"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		b.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		b.Fatalf("%s's cpuacct.usage: %q", cgroup, data)
	}
	return time.Duration(ns)
}

// processTreeCPU is a process's CPU time (user and system) with that of
// the children it has waited for.
func processTreeCPU(b *testing.B, pid int) time.Duration {
	return statTicks(b, pid, 11, 12, 13, 14) // utime stime cutime cstime
}

// statTicks sums fields of /proc/<pid>/stat that count clock ticks,
// numbered from the state (the field after the command, which may hold
// spaces) on.
func statTicks(b *testing.B, pid int, fields ...int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	var ticks int64
	for _, i := range fields {
		if i >= len(f) {
			b.Fatalf("/proc/%d/stat: %q", pid, data)
		}
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %q", pid, data)
		}
		ticks += n
	}
	// NOTE: USER_HZ is 100 on Linux for every architecture Go supports here.
	return time.Duration(ticks) * 10 * time.Millisecond
}
