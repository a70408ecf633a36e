package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestWithCapabilities(t *testing.T) {
	defaults := []string{"CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW"}
	all := []string{"CAP_CHOWN", "CAP_KILL", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_SYS_ADMIN"}
	tests := map[string]struct {
		add, drop []string
		want      []string
	}{
		"defaults kept":             {want: defaults},
		"add with and without CAP_": {add: []string{"NET_ADMIN", "CAP_SYS_ADMIN"}, want: []string{"CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW", "CAP_NET_ADMIN", "CAP_SYS_ADMIN"}},
		"lower case":                {add: []string{"net_admin"}, want: []string{"CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW", "CAP_NET_ADMIN"}},
		"drop":                      {drop: []string{"NET_RAW"}, want: []string{"CAP_CHOWN", "CAP_KILL"}},
		"drop wins over add":        {add: []string{"NET_ADMIN"}, drop: []string{"CAP_NET_ADMIN"}, want: defaults},
		"drop ALL add one":          {add: []string{"KILL"}, drop: []string{"ALL"}, want: []string{"CAP_KILL"}},
		"add ALL drop one":          {add: []string{"ALL"}, drop: []string{"SYS_ADMIN"}, want: []string{"CAP_CHOWN", "CAP_KILL", "CAP_NET_ADMIN", "CAP_NET_RAW"}},
		"drop all":                  {drop: []string{"all"}, want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := &oci.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{
				Bounding: slices.Clone(defaults), Effective: slices.Clone(defaults), Permitted: slices.Clone(defaults),
				Ambient: []string{"CAP_KILL"},
			}}}
			if err := withCapabilities(tc.add, tc.drop, all)(context.Background(), nil, &containers.Container{}, s); err != nil {
				t.Fatal(err)
			}
			c := s.Process.Capabilities
			for set, got := range map[string][]string{"bounding": c.Bounding, "effective": c.Effective, "permitted": c.Permitted} {
				if diff := cmp.Diff(tc.want, got, cmpEmptyNil); diff != "" {
					t.Errorf("%s (-want,+got):\n%s", set, diff)
				}
			}
			if len(c.Ambient) != 0 {
				t.Errorf("ambient = %v, want none", c.Ambient)
			}
		})
	}
}

var cmpEmptyNil = cmp.Transformer("emptyNil", func(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
})

func TestWithSeccomp(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(profile, []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		seccomp     Seccomp
		wantDefault specs.LinuxSeccompAction
		wantProfile bool
		wantErr     error
	}{
		"zero value is RuntimeDefault": {wantDefault: specs.ActErrno, wantProfile: true},
		"RuntimeDefault":               {seccomp: Seccomp{Type: SeccompRuntimeDefault}, wantDefault: specs.ActErrno, wantProfile: true},
		"Unconfined":                   {seccomp: Seccomp{Type: SeccompUnconfined}},
		"Localhost":                    {seccomp: Seccomp{Type: SeccompLocalhost, LocalhostPath: profile}, wantDefault: specs.ActAllow, wantProfile: true},
		"Localhost missing file":       {seccomp: Seccomp{Type: SeccompLocalhost, LocalhostPath: profile + ".absent"}, wantErr: errBadSeccomp},
		"Localhost relative path":      {seccomp: Seccomp{Type: SeccompLocalhost, LocalhostPath: "profile.json"}, wantErr: errBadSeccomp},
		"unknown type":                 {seccomp: Seccomp{Type: "Strict"}, wantErr: errBadSeccomp},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withSeccomp(tc.seccomp))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if got := s.Linux.Seccomp != nil; got != tc.wantProfile {
				t.Fatalf("has profile = %v, want %v", got, tc.wantProfile)
			}
			if tc.wantProfile && s.Linux.Seccomp.DefaultAction != tc.wantDefault {
				t.Errorf("default action = %v, want %v", s.Linux.Seccomp.DefaultAction, tc.wantDefault)
			}
		})
	}
}

func TestWithUnmaskedProc(t *testing.T) {
	for _, unmasked := range []bool{false, true} {
		s := &oci.Spec{Linux: &specs.Linux{MaskedPaths: []string{"/proc/kcore"}, ReadonlyPaths: []string{"/proc/sys"}}}
		if err := withUnmaskedProc(unmasked)(context.Background(), nil, &containers.Container{}, s); err != nil {
			t.Fatal(err)
		}
		if got := len(s.Linux.MaskedPaths) == 0 && len(s.Linux.ReadonlyPaths) == 0; got != unmasked {
			t.Errorf("unmasked=%v: masked %v, read-only %v", unmasked, s.Linux.MaskedPaths, s.Linux.ReadonlyPaths)
		}
	}
}

func TestWithPrivileged(t *testing.T) {
	base := func() *oci.Spec {
		return &oci.Spec{
			Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_CHOWN"}}},
			Linux: &specs.Linux{
				MaskedPaths: []string{"/proc/kcore"}, ReadonlyPaths: []string{"/proc/sys"},
				Seccomp:   &specs.LinuxSeccomp{DefaultAction: specs.ActErrno},
				Resources: &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}},
			},
			Mounts: []specs.Mount{
				{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "ro"}},
				{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "ro"}},
			},
		}
	}
	s := base()
	if err := withPrivileged(false)(context.Background(), nil, &containers.Container{}, s); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(base(), s); diff != "" {
		t.Errorf("not privileged changed the spec (-want,+got):\n%s", diff)
	}

	if err := withPrivileged(true)(context.Background(), nil, &containers.Container{}, s); err != nil {
		t.Fatal(err)
	}
	type summary struct {
		AllCaps        bool
		Masked         []string
		ReadOnly       []string
		Seccomp        *specs.LinuxSeccomp
		DeviceRules    []specs.LinuxDeviceCgroup
		HasHostDevices bool
		MountOptions   [][]string
	}
	got := summary{
		AllCaps:        cmp.Equal(allCapabilities(), s.Process.Capabilities.Bounding),
		Masked:         s.Linux.MaskedPaths,
		ReadOnly:       s.Linux.ReadonlyPaths,
		Seccomp:        s.Linux.Seccomp,
		DeviceRules:    s.Linux.Resources.Devices,
		HasHostDevices: slices.ContainsFunc(s.Linux.Devices, func(d specs.LinuxDevice) bool { return d.Path == "/dev/null" }),
		MountOptions:   [][]string{s.Mounts[0].Options, s.Mounts[1].Options},
	}
	want := summary{
		AllCaps:        true,
		DeviceRules:    []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}},
		HasHostDevices: true,
		MountOptions:   [][]string{{"nosuid", "rw"}, {"nosuid", "rw"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("privileged (-want,+got):\n%s", diff)
	}
}

func TestWithNoNewPrivileges(t *testing.T) {
	for _, noNew := range []bool{false, true} {
		s := &oci.Spec{Process: &specs.Process{NoNewPrivileges: !noNew}}
		if err := withNoNewPrivileges(noNew)(context.Background(), nil, &containers.Container{}, s); err != nil {
			t.Fatal(err)
		}
		if s.Process.NoNewPrivileges != noNew {
			t.Errorf("NoNewPrivileges = %v, want %v", s.Process.NoNewPrivileges, noNew)
		}
	}
}

func TestWithReadonlyRootfs(t *testing.T) {
	tests := map[string]struct {
		readOnly bool
		want     *oci.Spec
	}{
		"writable":  {want: &oci.Spec{}},
		"read-only": {readOnly: true, want: &oci.Spec{Root: &specs.Root{Readonly: true}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withReadonlyRootfs(tc.readOnly))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("spec (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithSysctls(t *testing.T) {
	tests := map[string]struct {
		sysctls map[string]string
		want    *oci.Spec
	}{
		"none": {want: &oci.Spec{}},
		"some": {
			sysctls: map[string]string{"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1"},
			want: &oci.Spec{Linux: &specs.Linux{Sysctl: map[string]string{
				"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1",
			}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withSysctls(tc.sysctls))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("spec (-want,+got):\n%s", diff)
			}
		})
	}
}
