package runtime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// errBadMount: a Mount runtime cannot make.
var errBadMount = errors.New("invalid mount")

// withMounts adds the volume mounts after the default ones, replacing any
// default at the same destination. Bind mounts are recursive ("rbind") and
// private unless the options say otherwise; tmpfs mounts take their options
// (size=…, mode=…) as given.
//
// NOTE: like containerd CRI, the mounts are stably sorted by the depth of
// their destination, so /data is mounted before /data/cache whatever order
// the pod lists them in; mounts of equal depth keep their order.
func withMounts(mounts []Mount) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		add := make([]specs.Mount, 0, len(mounts))
		for _, m := range mounts {
			sm, err := specMount(m)
			if err != nil {
				return err
			}
			add = append(add, sm)
		}
		sort.SliceStable(add, func(i, j int) bool { return depth(add[i].Destination) < depth(add[j].Destination) })
		for _, m := range add {
			s.Mounts = append(withoutDestination(s.Mounts, m.Destination), m)
		}
		return nil
	}
}

// withCgroupMount mounts the container's cgroups read-only at
// /sys/fs/cgroup (writable once privileged), as Docker and containerd CRI do.
func withCgroupMount(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	s.Mounts = append(withoutDestination(s.Mounts, "/sys/fs/cgroup"), specs.Mount{
		Destination: "/sys/fs/cgroup",
		Type:        "cgroup",
		Source:      "cgroup",
		Options:     []string{"nosuid", "noexec", "nodev", "relatime", "ro"},
	})
	return nil
}

// specMount turns m into an OCI mount.
func specMount(m Mount) (specs.Mount, error) {
	if !filepath.IsAbs(m.Destination) {
		return specs.Mount{}, fmt.Errorf("%w: destination %q is not absolute", errBadMount, m.Destination)
	}
	dest := filepath.Clean(m.Destination)
	switch m.Type {
	case "", "bind":
		if !filepath.IsAbs(m.Source) {
			return specs.Mount{}, fmt.Errorf("%w: source %q of %s is not absolute", errBadMount, m.Source, dest)
		}
		return specs.Mount{Destination: dest, Type: "bind", Source: m.Source, Options: bindOptions(m.Options)}, nil
	case "tmpfs":
		source := m.Source
		if source == "" {
			source = "tmpfs"
		}
		return specs.Mount{Destination: dest, Type: "tmpfs", Source: source, Options: slices.Clone(m.Options)}, nil
	default:
		return specs.Mount{}, fmt.Errorf("%w: type %q of %s", errBadMount, m.Type, dest)
	}
}

// bindOptions adds "rbind" unless a bind option is given, and "rprivate"
// unless a propagation is.
func bindOptions(opts []string) []string {
	out := slices.Clone(opts)
	if !slices.Contains(out, "bind") && !slices.Contains(out, "rbind") {
		out = append([]string{"rbind"}, out...)
	}
	if !slices.ContainsFunc(out, isPropagation) {
		out = append(out, "rprivate")
	}
	return out
}

func isPropagation(opt string) bool {
	switch strings.TrimPrefix(opt, "r") {
	case "private", "shared", "slave", "unbindable":
		return true
	}
	return false
}

// depth is the number of path elements of the clean absolute path p.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// withoutDestination is mounts without those at dest.
func withoutDestination(mounts []specs.Mount, dest string) []specs.Mount {
	return slices.DeleteFunc(mounts, func(m specs.Mount) bool { return filepath.Clean(m.Destination) == dest })
}
