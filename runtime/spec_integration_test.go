//go:build integration

package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/skiff-sh/skiff/runtime"
)

// run starts cfg's container, waits for it to exit 0 and returns its log.
func run(t *testing.T, rt *runtime.Runtime, cfg runtime.ContainerConfig) []string {
	t.Helper()
	if st := waitExit(t, start(t, rt, cfg)); st.Code != 0 {
		t.Errorf("exit code %d; log: %q", st.Code, logLines(t, rt, cfg))
		return nil
	}
	return logLines(t, rt, cfg)
}

// statusLines is a script printing the named fields of /proc/self/status.
func statusLines(fields ...string) string {
	return fmt.Sprintf("grep -E '^(%s):' /proc/self/status", strings.Join(fields, "|"))
}

// processStatus is field of this test process's /proc/self/status.
func processStatus(t *testing.T, field string) string {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return ""
}

func TestSecurityContext(t *testing.T) {
	rt := newRuntime(t)
	profile := filepath.Join(t.TempDir(), "no-mkdir.json")
	if err := os.WriteFile(profile, []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	gid := uint32(3000)
	tests := map[string]struct {
		configure func(*runtime.ContainerConfig)
		script    string
		want      []string
	}{
		"defaults: RuntimeDefault seccomp, privilege escalation allowed": {
			script: statusLines("Seccomp", "NoNewPrivs"),
			want:   []string{"stdout NoNewPrivs:\t0", "stdout Seccomp:\t2"},
		},
		"seccomp Unconfined": {
			configure: func(c *runtime.ContainerConfig) { c.Seccomp = runtime.Seccomp{Type: runtime.SeccompUnconfined} },
			script:    statusLines("Seccomp"),
			want:      []string{"stdout Seccomp:\t0"},
		},
		"seccomp Localhost": {
			configure: func(c *runtime.ContainerConfig) {
				c.Seccomp = runtime.Seccomp{Type: runtime.SeccompLocalhost, LocalhostPath: profile}
			},
			script: "mkdir /tmp/x 2>/dev/null || echo refused",
			want:   []string{"stdout refused"},
		},
		"allowPrivilegeEscalation false": {
			configure: func(c *runtime.ContainerConfig) { c.NoNewPrivileges = true },
			script:    statusLines("NoNewPrivs"),
			want:      []string{"stdout NoNewPrivs:\t1"},
		},
		"runAsUser, runAsGroup, supplementalGroups": {
			configure: func(c *runtime.ContainerConfig) {
				c.User = &runtime.User{UID: 1000, GID: &gid, Groups: []uint32{2000}}
			},
			script: statusLines("Uid", "Gid", "Groups"),
			want:   []string{"stdout Uid:\t1000\t1000\t1000\t1000", "stdout Gid:\t3000\t3000\t3000\t3000", "stdout Groups:\t2000 3000 "},
		},
		"runAsUser takes the image's primary group": {
			configure: func(c *runtime.ContainerConfig) { c.User = &runtime.User{UID: 65534} },
			script:    "id",
			want:      []string{"stdout uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)"},
		},
		"drop ALL, add net_bind_service": {
			configure: func(c *runtime.ContainerConfig) {
				c.CapDrop, c.CapAdd = []string{"ALL"}, []string{"net_bind_service"}
			},
			script: statusLines("CapEff"),
			want:   []string{"stdout CapEff:\t0000000000000400"},
		},
		"readOnlyRootFilesystem": {
			configure: func(c *runtime.ContainerConfig) { c.ReadOnlyRootfs = true },
			script:    "touch /x 2>/dev/null || echo refused",
			want:      []string{"stdout refused"},
		},
		"procMount Default masks /proc": {
			script: "grep -c ' /proc/keys ' /proc/mounts",
			want:   []string{"stdout 1"},
		},
		"procMount Unmasked": {
			configure: func(c *runtime.ContainerConfig) { c.UnmaskedProc = true },
			script:    "grep -c ' /proc/keys ' /proc/mounts; true",
			want:      []string{"stdout 0"},
		},
		"sysctls": {
			configure: func(c *runtime.ContainerConfig) { c.Sysctls = map[string]string{"kernel.shm_rmid_forced": "1"} },
			script:    "cat /proc/sys/kernel/shm_rmid_forced",
			want:      []string{"stdout 1"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := newConfig(t, "sh", "-c", tc.script)
			if tc.configure != nil {
				tc.configure(&cfg)
			}
			if diff := cmp.Diff(tc.want, run(t, rt, cfg)); diff != "" {
				t.Errorf("output (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPrivileged(t *testing.T) {
	rt := newRuntime(t)
	cfg := newConfig(t, "sh", "-c", statusLines("CapEff", "Seccomp")+"; grep -c ' /sys sysfs rw,' /proc/mounts; grep -c ' /proc/keys ' /proc/mounts; test -c /dev/kmsg && echo devices")
	cfg.Privileged = true
	want := []string{"stdout CapEff:\t" + processStatus(t, "CapEff"), "stdout Seccomp:\t0", "stdout 1", "stdout 0", "stdout devices"}
	if diff := cmp.Diff(want, run(t, rt, cfg)); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
}

func TestResources(t *testing.T) {
	rt := newRuntime(t)
	cfg := newConfig(t, "sh", "-c", `
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	cat /sys/fs/cgroup/cpu.weight /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max
else
	cat /sys/fs/cgroup/cpu/cpu.shares /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us /sys/fs/cgroup/memory/memory.limit_in_bytes
fi`)
	cfg.CPUShares, cfg.CPUQuota, cfg.CPUPeriod = 512, 50000, 100000
	cfg.MemoryLimit = 64 << 20
	want := []string{"stdout 512", "stdout 50000", "stdout 100000", "stdout 67108864"}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil { // cgroup v2 host
		want = []string{"stdout 20", "stdout 50000 100000", "stdout 67108864"}
	}
	if diff := cmp.Diff(want, run(t, rt, cfg)); diff != "" {
		t.Errorf("cgroup values (-want,+got):\n%s", diff)
	}
}

func TestMounts(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	for _, sub := range []string{"rw", "ro"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, sub, "in"), []byte(sub+" volume\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := newConfig(t, "sh", "-c", `
cat /data/in /data/ro/in
echo written > /data/out
touch /data/ro/x 2>/dev/null || echo ro refused
grep ' /cache ' /proc/mounts | grep -o 'size=[0-9]*k'
echo cached > /cache/f && cat /cache/f`)
	cfg.ReadOnlyRootfs = true
	cfg.Mounts = []runtime.Mount{
		{Source: filepath.Join(dir, "ro"), Destination: "/data/ro", Options: []string{"ro"}},
		{Source: filepath.Join(dir, "rw"), Destination: "/data"},
		{Destination: "/cache", Type: "tmpfs", Options: []string{"size=1m"}},
	}
	want := []string{"stdout rw volume", "stdout ro volume", "stdout ro refused", "stdout size=1024k", "stdout cached"}
	if diff := cmp.Diff(want, run(t, rt, cfg)); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
	out, err := os.ReadFile(filepath.Join(dir, "rw", "out"))
	if err != nil || string(out) != "written\n" {
		t.Errorf("written through the bind mount: %q, %v", out, err)
	}
}

func TestEtcFiles(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	hosts, resolv := filepath.Join(dir, "hosts"), filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(hosts, []byte("10.0.0.2 pod-a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resolv, []byte("nameserver 10.0.0.10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := newConfig(t, "sh", "-c", "cat /etc/hosts /etc/resolv.conf; echo '10.0.0.3 extra' >> /etc/hosts && echo writable")
	cfg.HostsPath, cfg.ResolvConfPath = hosts, resolv
	want := []string{"stdout 10.0.0.2 pod-a", "stdout nameserver 10.0.0.10", "stdout writable"}
	if diff := cmp.Diff(want, run(t, rt, cfg)); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
}

// newNetNS starts a process in a new network namespace and returns the
// namespace's path; the process ends with the test.
func newNetNS(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("unshare", "--net", "sh", "-c", "echo ready; exec sleep 300")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("unshare: %q, %v", line, err)
	}
	return fmt.Sprintf("/proc/%d/ns/net", cmd.Process.Pid)
}

func TestNamespaces(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()

	t.Run("network namespace", func(t *testing.T) {
		cfg := newConfig(t, "sh", "-c", "grep -c : /proc/net/dev; readlink /proc/self/ns/net")
		cfg.NetNSPath = newNetNS(t)
		want, err := os.Readlink(cfg.NetNSPath)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"stdout 1", "stdout " + want}, run(t, rt, cfg)); diff != "" {
			t.Errorf("output (-want,+got):\n%s", diff)
		}
	})

	t.Run("host network by default", func(t *testing.T) {
		want, err := os.Readlink("/proc/self/ns/net")
		if err != nil {
			t.Fatal(err)
		}
		cfg := newConfig(t, "readlink", "/proc/self/ns/net")
		if diff := cmp.Diff([]string{"stdout " + want}, run(t, rt, cfg)); diff != "" {
			t.Errorf("output (-want,+got):\n%s", diff)
		}
	})

	t.Run("joined PID namespace", func(t *testing.T) {
		target := newConfig(t, "sleep", "300")
		start(t, rt, target)
		pid, err := rt.PID(ctx, target.ID)
		if err != nil {
			t.Fatal(err)
		}
		cfg := newConfig(t, "sh", "-c", "cat /proc/1/cmdline | tr '\\0' ' '; echo")
		cfg.PIDNSPath = fmt.Sprintf("/proc/%d/ns/pid", pid)
		if diff := cmp.Diff([]string{"stdout sleep 300 "}, run(t, rt, cfg)); diff != "" {
			t.Errorf("output (-want,+got):\n%s", diff)
		}
	})
}
