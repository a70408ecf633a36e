package runtime

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	"github.com/google/go-cmp/cmp"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// applyToEmpty applies opt to an empty spec.
func applyToEmpty(t *testing.T, opt oci.SpecOpts) (*oci.Spec, error) {
	t.Helper()
	s := &oci.Spec{}
	err := opt(context.Background(), nil, &containers.Container{ID: "c1"}, s)
	return s, err
}

func TestWithArgs(t *testing.T) {
	image := ocispec.ImageConfig{Entrypoint: []string{"/entry"}, Cmd: []string{"cmd-arg"}}
	tests := map[string]struct {
		image         ocispec.ImageConfig
		command, args []string
		want          []string
		wantErr       error
	}{
		"image entrypoint and cmd": {image: image, want: []string{"/entry", "cmd-arg"}},
		"command drops cmd":        {image: image, command: []string{"echo"}, want: []string{"echo"}},
		"args replace cmd":         {image: image, args: []string{"a", "b"}, want: []string{"/entry", "a", "b"}},
		"command and args":         {image: image, command: []string{"sh", "-c"}, args: []string{"exit 3"}, want: []string{"sh", "-c", "exit 3"}},
		"cmd only image":           {image: ocispec.ImageConfig{Cmd: []string{"sh"}}, want: []string{"sh"}},
		"args over cmd only image": {image: ocispec.ImageConfig{Cmd: []string{"sh"}}, args: []string{"true"}, want: []string{"true"}},
		"nothing to run":           {wantErr: errNoCommand},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withArgs(tc.image, tc.command, tc.args))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if diff := cmp.Diff(tc.want, s.Process.Args); diff != "" {
				t.Errorf("args (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithEnv(t *testing.T) {
	tests := map[string]struct {
		image, env []string
		want       []string
	}{
		"none":             {want: nil},
		"image only":       {image: []string{"PATH=/bin", "A=1"}, want: []string{"PATH=/bin", "A=1"}},
		"pod over image":   {image: []string{"PATH=/bin", "A=1"}, env: []string{"A=2", "B=3"}, want: []string{"PATH=/bin", "A=2", "B=3"}},
		"pod only":         {env: []string{"B=3"}, want: []string{"B=3"}},
		"empty value kept": {image: []string{"A=1"}, env: []string{"A="}, want: []string{"A="}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withEnv(tc.image, tc.env))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if s.Process != nil {
				got = s.Process.Env
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("env (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithWorkingDir(t *testing.T) {
	tests := map[string]struct {
		image, dir, want string
	}{
		"default root": {want: "/"},
		"image's":      {image: "/srv", want: "/srv"},
		"pod's wins":   {image: "/srv", dir: "/work", want: "/work"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withWorkingDir(tc.image, tc.dir))
			if err != nil {
				t.Fatal(err)
			}
			if s.Process.Cwd != tc.want {
				t.Errorf("cwd = %q, want %q", s.Process.Cwd, tc.want)
			}
		})
	}
}

func TestWithHostnameEnv(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct{ name, want string }{
		"pod hostname":        {name: "job-a-0", want: "HOSTNAME=job-a-0"},
		"host's when unnamed": {want: "HOSTNAME=" + host},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withHostnameEnv(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.want}, s.Process.Env); diff != "" {
				t.Errorf("env (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithTTY(t *testing.T) {
	tests := map[string]struct {
		tty  bool
		want *oci.Spec
	}{
		"no tty": {want: &oci.Spec{}},
		"tty": {tty: true, want: &oci.Spec{
			Process: &specs.Process{Terminal: true, Env: []string{"TERM=xterm"}},
			Linux:   &specs.Linux{},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withTTY(tc.tty))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("spec (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestSpecOptsOnDefaultSpec checks what the options keep and change of
// containerd's default spec for a plain container.
func TestSpecOptsOnDefaultSpec(t *testing.T) {
	ctx := namespacedContext()
	cfg := ContainerConfig{ID: "c1", Command: []string{"echo"}, Args: []string{"hi"}, Env: []string{"A=1"}, Hostname: "h"}
	img := ocispec.ImageConfig{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}}
	opts := append([]oci.SpecOpts{oci.WithRootFSPath(t.TempDir())}, specOpts(cfg, img, withUser(cfg.User, img.User))...)
	s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: cfg.ID}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Args, Env       []string
		Hostname        string
		HasNet, HasUTS  bool
		HasPID          bool
		Mounts          []string
		NoNewPrivileges bool
		Seccomp         bool
		Masked          bool
		Ambient         []string
		AdditionalGids  []uint32
		Terminal        bool
		CgroupsPath     string
		ReadonlyRoot    bool
	}
	got := summary{
		Args: s.Process.Args, Env: s.Process.Env, Hostname: s.Hostname,
		HasNet:          hasNamespace(s.Linux.Namespaces, specs.NetworkNamespace),
		HasUTS:          hasNamespace(s.Linux.Namespaces, specs.UTSNamespace),
		HasPID:          hasNamespace(s.Linux.Namespaces, specs.PIDNamespace),
		NoNewPrivileges: s.Process.NoNewPrivileges,
		Seccomp:         s.Linux.Seccomp != nil,
		Masked:          len(s.Linux.MaskedPaths) > 0 && len(s.Linux.ReadonlyPaths) > 0,
		Ambient:         s.Process.Capabilities.Ambient,
		AdditionalGids:  s.Process.User.AdditionalGids,
		Terminal:        s.Process.Terminal,
		CgroupsPath:     s.Linux.CgroupsPath,
		ReadonlyRoot:    s.Root.Readonly,
	}
	for _, m := range s.Mounts {
		got.Mounts = append(got.Mounts, m.Destination)
	}
	want := summary{
		Args: []string{"echo", "hi"}, Env: []string{"HOSTNAME=h", "PATH=/bin", "A=1"}, Hostname: "h",
		HasUTS: true, HasPID: true,
		Mounts:         []string{"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/sys", "/etc/resolv.conf", "/etc/hosts", "/sys/fs/cgroup"},
		Seccomp:        true,
		Masked:         true,
		AdditionalGids: []uint32{0},
		CgroupsPath:    "/test/c1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec (-want,+got):\n%s", diff)
	}
	if len(s.Process.Rlimits) == 0 {
		t.Error("containerd's default rlimits are gone")
	}
	if !slices.Contains(s.Process.Capabilities.Bounding, "CAP_CHOWN") || slices.Contains(s.Process.Capabilities.Bounding, "CAP_SYS_ADMIN") {
		t.Errorf("not containerd's default capabilities: %v", s.Process.Capabilities.Bounding)
	}
}
