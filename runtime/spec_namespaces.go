package runtime

import (
	"context"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// withNetwork joins the network namespace at path (the pod's, made by CNI),
// or keeps the host's network when path is empty.
//
// NOTE: an empty path is what a hostNetwork pod gets from the kubelet.
func withNetwork(path string) oci.SpecOpts {
	if path == "" {
		return oci.WithHostNamespace(specs.NetworkNamespace)
	}
	return oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: path})
}

// withPIDNamespace joins the PID namespace at path (another container's,
// /proc/<pid>/ns/pid); an empty path keeps the container's own.
func withPIDNamespace(path string) oci.SpecOpts {
	if path == "" {
		return nop
	}
	return oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: path})
}

// withEtcFiles bind-mounts hostsPath at /etc/hosts and resolvConfPath at
// /etc/resolv.conf, writable unless the root filesystem is read-only; an
// empty path mounts the host's own file read-only.
//
// NOTE: containerd CRI mounts the pod's hosts and resolv.conf files
// read-only exactly when readOnlyRootFilesystem is set.
func withEtcFiles(hostsPath, resolvConfPath, hostnamePath string, readOnlyRootfs bool) oci.SpecOpts {
	mode := "rw"
	if readOnlyRootfs {
		mode = "ro"
	}
	file := func(dest, source string) specs.Mount {
		if source == "" {
			return specs.Mount{Destination: dest, Type: "bind", Source: dest, Options: []string{"rbind", "ro"}}
		}
		return specs.Mount{Destination: dest, Type: "bind", Source: source, Options: []string{"rbind", mode}}
	}
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		mounts := []specs.Mount{file("/etc/resolv.conf", resolvConfPath), file("/etc/hosts", hostsPath)}
		if hostnamePath != "" {
			mounts = append(mounts, file("/etc/hostname", hostnamePath))
		}
		for _, m := range mounts {
			s.Mounts = append(withoutDestination(s.Mounts, m.Destination), m)
		}
		return nil
	}
}

// withHostname gives the container its own UTS namespace named name
// (kept as it is when name is empty).
func withHostname(name string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		ensureLinux(s)
		if !hasNamespace(s.Linux.Namespaces, specs.UTSNamespace) {
			s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UTSNamespace})
		}
		if name != "" {
			s.Hostname = name
		}
		return nil
	}
}
