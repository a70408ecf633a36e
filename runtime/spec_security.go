package runtime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/contrib/seccomp"
	"github.com/containerd/containerd/oci"
	"github.com/containerd/containerd/pkg/cap"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// errBadSeccomp: a Seccomp runtime cannot apply.
var errBadSeccomp = errors.New("invalid seccomp profile")

// allCapabilities is every capability this process has, what "ALL" and
// privileged grant (containerd CRI's choice too).
func allCapabilities() []string {
	caps, err := cap.Current()
	if err != nil {
		logger("").WithError(err).Warn("reading the current capabilities; using all known ones")
		return cap.Known()
	}
	return caps
}

// withCapabilities adds and drops capabilities over the default set, as
// containerd CRI does: "ALL" in add grants all, "ALL" in drop clears the set
// before the named ones are added, and named drops win over named adds.
// Names may come with or without the "CAP_" prefix, in any case. Ambient
// capabilities are cleared.
func withCapabilities(add, drop, all []string) oci.SpecOpts {
	var opts []oci.SpecOpts
	if slices.ContainsFunc(add, isAll) {
		opts = append(opts, oci.WithCapabilities(slices.Clone(all)))
	}
	if slices.ContainsFunc(drop, isAll) {
		opts = append(opts, oci.WithCapabilities(nil))
	}
	opts = append(opts,
		oci.WithAddedCapabilities(capNames(add)),
		oci.WithDroppedCapabilities(capNames(drop)),
		oci.WithAmbientCapabilities(nil),
	)
	return oci.Compose(opts...)
}

func isAll(name string) bool { return strings.EqualFold(name, "ALL") }

// Grants reports whether adding the capabilities add (spelled as
// ContainerConfig.CapAdd takes them) grants the capability name
// ("NET_ADMIN").
func Grants(add []string, name string) bool {
	if slices.ContainsFunc(add, isAll) {
		return true
	}
	want := capNames([]string{name}) // NOTE: empty for "ALL", which add lacks
	return len(want) == 1 && slices.Contains(capNames(add), want[0])
}

// capNames are names as the OCI spec spells them (CAP_NET_ADMIN), without "ALL".
func capNames(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if isAll(n) {
			continue
		}
		n = strings.ToUpper(n)
		if !strings.HasPrefix(n, "CAP_") {
			n = "CAP_" + n
		}
		out = append(out, n)
	}
	return out
}

// withSeccomp applies the seccomp profile: containerd's default profile for
// RuntimeDefault (and the zero value), none for Unconfined, the JSON file at
// LocalhostPath for Localhost. Apply it after the capabilities: the default
// profile allows some syscalls only to holders of some capabilities.
func withSeccomp(sc Seccomp) oci.SpecOpts {
	return func(ctx context.Context, client oci.Client, c *containers.Container, s *oci.Spec) error {
		ensureLinux(s)
		ensureProcess(s)
		if s.Process.Capabilities == nil {
			s.Process.Capabilities = &specs.LinuxCapabilities{}
		}
		switch sc.Type {
		case "", SeccompRuntimeDefault:
			return seccomp.WithDefaultProfile()(ctx, client, c, s)
		case SeccompUnconfined:
			return oci.WithSeccompUnconfined(ctx, client, c, s)
		case SeccompLocalhost:
			if !filepath.IsAbs(sc.LocalhostPath) {
				return fmt.Errorf("%w: localhost profile path %q is not absolute", errBadSeccomp, sc.LocalhostPath)
			}
			if err := seccomp.WithProfile(sc.LocalhostPath)(ctx, client, c, s); err != nil {
				return fmt.Errorf("%w: %w", errBadSeccomp, err)
			}
			return nil
		default:
			return fmt.Errorf("%w: unknown type %q", errBadSeccomp, sc.Type)
		}
	}
}

// withUnmaskedProc drops the masked and read-only paths (procMount
// Unmasked); false keeps containerd's defaults.
func withUnmaskedProc(unmasked bool) oci.SpecOpts {
	if !unmasked {
		return nop
	}
	return oci.Compose(oci.WithMaskedPaths(nil), oci.WithReadonlyPaths(nil))
}

// withPrivileged makes the container privileged as containerd CRI does: all
// capabilities, no masked or read-only paths, writable sysfs and cgroupfs,
// no seccomp or AppArmor, and every host device, allowed.
func withPrivileged(privileged bool) oci.SpecOpts {
	if !privileged {
		return nop
	}
	return oci.Compose(oci.WithPrivileged, oci.WithHostDevices, oci.WithAllDevicesAllowed)
}

// withNoNewPrivileges sets no_new_privs exactly as asked.
//
// NOTE: containerd's default spec sets it; Kubernetes leaves it off unless
// allowPrivilegeEscalation is false (containerd CRI resets it likewise).
func withNoNewPrivileges(noNew bool) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		ensureProcess(s)
		s.Process.NoNewPrivileges = noNew
		return nil
	}
}

// withReadonlyRootfs mounts the root filesystem read-only when asked.
func withReadonlyRootfs(readOnly bool) oci.SpecOpts {
	if !readOnly {
		return nop
	}
	return oci.WithRootFSReadonly()
}

// withSysctls sets the namespaced sysctls.
func withSysctls(sysctls map[string]string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if len(sysctls) == 0 {
			return nil
		}
		ensureLinux(s)
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = make(map[string]string, len(sysctls))
		}
		for k, v := range sysctls {
			s.Linux.Sysctl[k] = v
		}
		return nil
	}
}

// nop is the option that changes nothing.
func nop(context.Context, oci.Client, *containers.Container, *oci.Spec) error { return nil }
