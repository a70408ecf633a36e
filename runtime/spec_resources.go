package runtime

import (
	"context"

	"github.com/containerd/containerd/containers"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// defaultCPUPeriod is the CFS period used when a quota comes without one
// (100ms, as the kubelet uses).
const defaultCPUPeriod = 100000

// withMemoryLimit sets the cgroup memory limit in bytes; 0 leaves it unset.
func withMemoryLimit(limit int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if limit <= 0 {
			return nil
		}
		ensureResources(s)
		if s.Linux.Resources.Memory == nil {
			s.Linux.Resources.Memory = &specs.LinuxMemory{}
		}
		s.Linux.Resources.Memory.Limit = &limit
		return nil
	}
}

// withCPU sets cpu.shares and the CFS quota and period; zero values leave
// them unset (a quota without a period gets 100ms).
//
// NOTE: the spec holds cgroup v1 values on either hierarchy; runc converts
// shares to cpu.weight and quota/period to cpu.max on cgroup v2.
func withCPU(shares uint64, quota int64, period uint64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
		if shares == 0 && quota <= 0 {
			return nil
		}
		ensureResources(s)
		if s.Linux.Resources.CPU == nil {
			s.Linux.Resources.CPU = &specs.LinuxCPU{}
		}
		cpu := s.Linux.Resources.CPU
		if shares > 0 {
			cpu.Shares = &shares
		}
		if quota > 0 {
			if period == 0 {
				period = defaultCPUPeriod
			}
			cpu.Quota, cpu.Period = &quota, &period
		}
		return nil
	}
}
