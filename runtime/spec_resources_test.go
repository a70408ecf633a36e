package runtime

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func ptr[T any](v T) *T { return &v }

func TestWithMemoryLimit(t *testing.T) {
	tests := map[string]struct {
		limit int64
		want  *specs.LinuxResources
	}{
		"none": {want: nil},
		"64Mi": {limit: 64 << 20, want: &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr(int64(64 << 20))}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withMemoryLimit(tc.limit))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, resources(s)); diff != "" {
				t.Errorf("resources (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithCPU(t *testing.T) {
	tests := map[string]struct {
		shares uint64
		quota  int64
		period uint64
		want   *specs.LinuxResources
	}{
		"none":   {want: nil},
		"shares": {shares: 512, want: &specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: ptr(uint64(512))}}},
		"quota with default period": {quota: 50000, want: &specs.LinuxResources{CPU: &specs.LinuxCPU{
			Quota: ptr(int64(50000)), Period: ptr(uint64(100000)),
		}}},
		"all three": {shares: 2, quota: 25000, period: 50000, want: &specs.LinuxResources{CPU: &specs.LinuxCPU{
			Shares: ptr(uint64(2)), Quota: ptr(int64(25000)), Period: ptr(uint64(50000)),
		}}},
		"period alone is no limit": {period: 50000, want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := applyToEmpty(t, withCPU(tc.shares, tc.quota, tc.period))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, resources(s)); diff != "" {
				t.Errorf("resources (-want,+got):\n%s", diff)
			}
		})
	}
}

func resources(s *specs.Spec) *specs.LinuxResources {
	if s.Linux == nil {
		return nil
	}
	return s.Linux.Resources
}
