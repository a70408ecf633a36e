package runtime

import (
	"context"
	"errors"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// errNoCommand: neither the pod nor the image says what to run.
var errNoCommand = errors.New("no command specified")

// specOpts are the OCI spec options for cfg on an image configured as img,
// applied over containerd's default spec (namespaces, mounts, capabilities,
// rlimits).
func specOpts(cfg ContainerConfig, img ocispec.ImageConfig) []oci.SpecOpts {
	return []oci.SpecOpts{
		withArgs(img, cfg.Command, cfg.Args),
		withEnv(img.Env, cfg.Env),
		withWorkingDir(img.WorkingDir, cfg.WorkingDir),
		withImageUser(img.User),
		withHostNetwork(),
		withHostname(cfg.Hostname),
		withMemoryLimit(cfg.MemoryLimit),
	}
}

// withArgs sets the process argv with Kubernetes' Command/Args semantics.
//
// NOTE: as the kubelet + containerd CRI do: Command replaces the image's
// ENTRYPOINT and drops its CMD; Args alone replaces CMD after the ENTRYPOINT;
// neither keeps ENTRYPOINT + CMD.
func withArgs(img ocispec.ImageConfig, command, args []string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if len(command) == 0 {
			command = img.Entrypoint
			if len(args) == 0 {
				args = img.Cmd
			}
		}
		argv := append(append([]string{}, command...), args...)
		if len(argv) == 0 {
			return errNoCommand
		}
		ensureProcess(s)
		s.Process.Args = argv
		return nil
	}
}

// withEnv sets the image's environment, then env over it (same keys replaced).
func withEnv(imageEnv, env []string) oci.SpecOpts {
	return oci.Compose(oci.WithEnv(imageEnv), oci.WithEnv(env))
}

// withWorkingDir sets the process cwd: dir, else the image's, else "/".
func withWorkingDir(imageDir, dir string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		ensureProcess(s)
		switch {
		case dir != "":
			s.Process.Cwd = dir
		case imageDir != "":
			s.Process.Cwd = imageDir
		default:
			s.Process.Cwd = "/"
		}
		return nil
	}
}

// withImageUser runs the process as the image's USER (names are resolved
// in the container's rootfs); an empty user keeps root.
func withImageUser(user string) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		if user == "" {
			return nil
		}
		return oci.WithUser(user)(ctx, client, c, s)
	}
}

// withHostNetwork keeps the container in the host's network namespace, with
// the host's /etc/resolv.conf and /etc/hosts mounted read-only.
//
// NOTE: pods use the host network until per-pod namespaces (CNI) exist;
// that is what a hostNetwork pod gets from the kubelet too.
func withHostNetwork() oci.SpecOpts {
	return oci.Compose(
		oci.WithHostNamespace(specs.NetworkNamespace),
		oci.WithHostResolvconf,
		oci.WithHostHostsFile,
	)
}

// withHostname gives the container its own UTS namespace named name
// (kept as it is when name is empty).
func withHostname(name string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if !hasNamespace(s.Linux.Namespaces, specs.UTSNamespace) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UTSNamespace})
		}
		if name != "" {
			s.Hostname = name
		}
		return nil
	}
}

// withMemoryLimit sets the cgroup memory limit in bytes; 0 leaves it unset.
func withMemoryLimit(limit int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if limit <= 0 {
			return nil
		}
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Resources == nil {
			s.Linux.Resources = &specs.LinuxResources{}
		}
		if s.Linux.Resources.Memory == nil {
			s.Linux.Resources.Memory = &specs.LinuxMemory{}
		}
		s.Linux.Resources.Memory.Limit = &limit
		return nil
	}
}

func hasNamespace(nss []specs.LinuxNamespace, t specs.LinuxNamespaceType) bool {
	for _, ns := range nss {
		if ns.Type == t {
			return true
		}
	}
	return false
}

func ensureProcess(s *oci.Spec) {
	if s.Process == nil {
		s.Process = &specs.Process{}
	}
}
