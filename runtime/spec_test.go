package runtime

import (
	"context"
	"errors"
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

func TestWithImageUser(t *testing.T) {
	tests := map[string]struct {
		user string
		want *specs.Process
	}{
		"no user keeps spec": {want: nil},
		"numeric uid:gid":    {user: "1000:100", want: &specs.Process{User: specs.User{UID: 1000, GID: 100, AdditionalGids: []uint32{100}}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withImageUser(tc.user))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.Process); diff != "" {
				t.Errorf("process (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithHostNetwork(t *testing.T) {
	s := &oci.Spec{Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{
		{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.UTSNamespace},
	}}}
	if err := withHostNetwork()(context.Background(), nil, &containers.Container{}, s); err != nil {
		t.Fatal(err)
	}
	want := &oci.Spec{
		Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.UTSNamespace}}},
		Mounts: []specs.Mount{
			{Destination: "/etc/resolv.conf", Type: "bind", Source: "/etc/resolv.conf", Options: []string{"rbind", "ro"}},
			{Destination: "/etc/hosts", Type: "bind", Source: "/etc/hosts", Options: []string{"rbind", "ro"}},
		},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("spec (-want,+got):\n%s", diff)
	}

	empty, err := applyToEmpty(t, withHostNetwork())
	if err != nil {
		t.Fatal(err)
	}
	if hasNamespace(empty.Linux.Namespaces, specs.NetworkNamespace) || len(empty.Mounts) != 2 {
		t.Errorf("on an empty spec: namespaces %v, mounts %v", empty.Linux.Namespaces, empty.Mounts)
	}
}

func TestWithHostname(t *testing.T) {
	tests := map[string]struct {
		name string
		want *oci.Spec
	}{
		"named": {name: "job-a-0", want: &oci.Spec{
			Hostname: "job-a-0",
			Linux:    &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.UTSNamespace}}},
		}},
		"unnamed keeps own namespace": {want: &oci.Spec{
			Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.UTSNamespace}}},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withHostname(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("spec (-want,+got):\n%s", diff)
			}
			// Applying twice does not add a second UTS namespace.
			if err := withHostname(tc.name)(context.Background(), nil, &containers.Container{}, s); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s); diff != "" {
				t.Errorf("spec after second apply (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithMemoryLimit(t *testing.T) {
	limit := int64(64 << 20)
	tests := map[string]struct {
		limit int64
		want  *specs.LinuxResources
	}{
		"none": {want: nil},
		"64Mi": {limit: limit, want: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: &limit}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withMemoryLimit(tc.limit))
			if err != nil {
				t.Fatal(err)
			}
			var got *specs.LinuxResources
			if s.Linux != nil {
				got = s.Linux.Resources
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("resources (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSpecOptsOnDefaultSpec(t *testing.T) {
	ctx := namespacedContext()
	cfg := ContainerConfig{ID: "c1", Command: []string{"echo"}, Args: []string{"hi"}, Env: []string{"A=1"}, Hostname: "h"}
	img := ocispec.ImageConfig{Env: []string{"PATH=/bin"}, Cmd: []string{"sh"}}
	s, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: cfg.ID}, specOpts(cfg, img)...)
	if err != nil {
		t.Fatal(err)
	}
	got := struct {
		Args, Env []string
		Hostname  string
		HasNet    bool
		HasUTS    bool
		Rlimits   []specs.POSIXRlimit
	}{s.Process.Args, s.Process.Env, s.Hostname,
		hasNamespace(s.Linux.Namespaces, specs.NetworkNamespace),
		hasNamespace(s.Linux.Namespaces, specs.UTSNamespace), s.Process.Rlimits}
	want := got
	want.Args, want.Env, want.Hostname, want.HasNet, want.HasUTS = []string{"echo", "hi"}, []string{"PATH=/bin", "A=1"}, "h", false, true
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec (-want,+got):\n%s", diff)
	}
	if len(s.Process.Rlimits) == 0 {
		t.Error("containerd's default rlimits are gone")
	}
}
