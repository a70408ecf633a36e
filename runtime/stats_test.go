package runtime

import (
	"testing"
	"time"

	cgroup1stats "github.com/containerd/cgroups/v3/cgroup1/stats"
	cgroup2stats "github.com/containerd/cgroups/v3/cgroup2/stats"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
)

func TestDecodeUsage(t *testing.T) {
	marshal := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := map[string]struct {
		typeURL string
		data    []byte
		want    Usage
	}{
		// memory.current 64 MiB, of which 16 MiB inactive file cache;
		// cpu.stat usage_usec 2.5 s.
		"cgroup v2": {
			typeURL: "io.containerd.cgroups.v2.Metrics",
			data: marshal(&cgroup2stats.Metrics{
				CPU:    &cgroup2stats.CPUStat{UsageUsec: 2_500_000, UserUsec: 2_000_000, SystemUsec: 500_000},
				Memory: &cgroup2stats.MemoryStat{Usage: 64 << 20, InactiveFile: 16 << 20, ActiveFile: 8 << 20, Anon: 40 << 20},
			}),
			want: Usage{CPU: 2500 * time.Millisecond, MemoryWorkingSet: 48 << 20},
		},
		"cgroup v2, all of it inactive file cache": {
			typeURL: "types.containerd.io/io.containerd.cgroups.v2.Metrics",
			data: marshal(&cgroup2stats.Metrics{
				Memory: &cgroup2stats.MemoryStat{Usage: 4 << 20, InactiveFile: 5 << 20},
			}),
			want: Usage{},
		},
		// cpuacct.usage in ns; memory.usage_in_bytes less
		// total_inactive_file (not the cgroup's own inactive_file).
		"cgroup v1": {
			typeURL: "io.containerd.cgroups.v1.Metrics",
			data: marshal(&cgroup1stats.Metrics{
				CPU:    &cgroup1stats.CPUStat{Usage: &cgroup1stats.CPUUsage{Total: 1_234_567_890}},
				Memory: &cgroup1stats.MemoryStat{Usage: &cgroup1stats.MemoryEntry{Usage: 100 << 20}, InactiveFile: 1 << 20, TotalInactiveFile: 30 << 20},
			}),
			want: Usage{CPU: 1_234_567_890, MemoryWorkingSet: 70 << 20},
		},
		"cgroup v1, no memory figures": {
			typeURL: "io.containerd.cgroups.v1.Metrics",
			data:    marshal(&cgroup1stats.Metrics{CPU: &cgroup1stats.CPUStat{Usage: &cgroup1stats.CPUUsage{Total: 5}}}),
			want:    Usage{CPU: 5},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := decodeUsage(tc.typeURL, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
	if _, err := decodeUsage("io.containerd.windows.Metrics", nil); err == nil {
		t.Error("metrics of an unknown type decoded")
	}
}
