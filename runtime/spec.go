package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// errNoCommand: neither the pod nor the image says what to run.
var errNoCommand = errors.New("no command specified")

// specOpts are the OCI spec options for cfg on an image configured as img,
// applied over containerd's default spec (namespaces, mounts, capabilities,
// rlimits). The order matters: process, identity (the given option: withUser
// or its cached form), namespaces and files, volume mounts (which may cover
// the defaults), resources, then security, where privileged overrides
// capabilities, seccomp and masked paths.
func specOpts(cfg ContainerConfig, img ocispec.ImageConfig, identity oci.SpecOpts) []oci.SpecOpts {
	return []oci.SpecOpts{
		oci.WithoutRunMount,
		withArgs(img, cfg.Command, cfg.Args),
		withHostnameEnv(cfg.Hostname),
		withEnv(img.Env, cfg.Env),
		withWorkingDir(img.WorkingDir, cfg.WorkingDir),
		identity,
		withNetwork(cfg.NetNSPath),
		withEtcFiles(cfg.HostsPath, cfg.ResolvConfPath, cfg.HostnamePath, cfg.ReadOnlyRootfs),
		withPIDNamespace(cfg.PIDNSPath),
		withHostname(cfg.Hostname),
		withCgroupMount,
		withMounts(cfg.Mounts),
		withMemoryLimit(cfg.MemoryLimit),
		withCPU(cfg.CPUShares, cfg.CPUQuota, cfg.CPUPeriod),
		withCapabilities(cfg.CapAdd, cfg.CapDrop, allCapabilities()),
		withSeccomp(cfg.Seccomp),
		withUnmaskedProc(cfg.UnmaskedProc),
		withPrivileged(cfg.Privileged),
		withNoNewPrivileges(cfg.NoNewPrivileges),
		withReadonlyRootfs(cfg.ReadOnlyRootfs),
		withSysctls(cfg.Sysctls),
		withTTY(cfg.TTY),
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

// withHostnameEnv sets HOSTNAME to the container's hostname (the host's
// when name is empty), before the image's and the pod's env, which may
// override it.
//
// NOTE: containerd CRI sets HOSTNAME the same way; Kubernetes pods see it.
func withHostnameEnv(name string) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		if name == "" {
			host, err := os.Hostname()
			if err != nil {
				return fmt.Errorf("reading the host name: %w", err)
			}
			name = host
		}
		return oci.WithEnv([]string{"HOSTNAME=" + name})(ctx, client, c, s)
	}
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

// withTTY gives the process a terminal (and TERM=xterm, as containerd CRI
// does); without tty it changes nothing.
func withTTY(tty bool) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		if !tty {
			return nil
		}
		ensureLinux(s)
		return oci.WithTTY(ctx, client, c, s)
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

func ensureLinux(s *oci.Spec) {
	if s.Linux == nil {
		s.Linux = &specs.Linux{}
	}
}

func ensureResources(s *oci.Spec) {
	ensureLinux(s)
	if s.Linux.Resources == nil {
		s.Linux.Resources = &specs.LinuxResources{}
	}
}
