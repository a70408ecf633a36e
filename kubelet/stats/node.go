package stats

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"

	"github.com/skiff-sh/skiff/runtime"
)

// ReadNode reads the node's usage from /proc: the CPU time spent outside
// idle and iowait, and the memory in use less the inactive file cache —
// the root cgroup's figures that the kubelet reports for the node.
func ReadNode() (runtime.Usage, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return runtime.Usage{}, fmt.Errorf("opening /proc: %w", err)
	}
	now := time.Now()
	st, err := fs.Stat()
	if err != nil {
		return runtime.Usage{}, fmt.Errorf("reading /proc/stat: %w", err)
	}
	mem, err := fs.Meminfo()
	if err != nil {
		return runtime.Usage{}, fmt.Errorf("reading /proc/meminfo: %w", err)
	}
	return nodeUsage(now, st.CPUTotal, mem)
}

// nodeUsage computes the node's usage from /proc's figures.
func nodeUsage(now time.Time, cpu procfs.CPUStat, mem procfs.Meminfo) (runtime.Usage, error) {
	if mem.MemTotalBytes == nil || mem.MemFreeBytes == nil || mem.InactiveFileBytes == nil {
		return runtime.Usage{}, fmt.Errorf("/proc/meminfo lacks MemTotal, MemFree or Inactive(file)")
	}
	busy := cpu.User + cpu.Nice + cpu.System + cpu.IRQ + cpu.SoftIRQ + cpu.Steal
	used := *mem.MemTotalBytes - *mem.MemFreeBytes
	ws := uint64(0)
	if used > *mem.InactiveFileBytes {
		ws = used - *mem.InactiveFileBytes
	}
	return runtime.Usage{Timestamp: now, CPU: time.Duration(busy * float64(time.Second)), MemoryWorkingSet: ws}, nil
}
