package podworker

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiff-sh/skiff/kube"
)

// The kubelet's cgroup CPU constants (pkg/kubelet/cm).
const (
	minShares      = 2
	maxShares      = 262144
	sharesPerCPU   = 1024
	milliCPUToCPU  = 1000
	quotaPeriod    = 100000 // µs
	minQuotaPeriod = 1000   // µs
)

// milliCPUToShares is the kubelet's MilliCPUToShares: cpu.shares for a
// request of milliCPU.
func milliCPUToShares(milliCPU int64) uint64 {
	if milliCPU == 0 {
		return minShares
	}
	shares := milliCPU * sharesPerCPU / milliCPUToCPU
	return uint64(min(max(shares, minShares), maxShares))
}

// milliCPUToQuota is the kubelet's milliCPUToQuota: the CFS quota for a
// limit of milliCPU over period; 0 = no limit.
func milliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/milliCPUToCPU, minQuotaPeriod)
}

// cgroupLimits are the cgroup settings of one container.
type cgroupLimits struct {
	shares uint64
	quota  int64
	period uint64
	memory int64
}

// containerLimits computes the cgroup settings the kubelet gives c
// (calculateLinuxResources): shares from the cpu request (or limit), CFS
// quota from the cpu limit, the memory limit in bytes.
//
// NOTE: a container without any cpu request gets no shares setting (the
// kernel's 1024) rather than the kubelet's 2: the kubelet's 2 shares live
// inside the kubepods cgroup, which weighs as much as the node's
// allocatable against the host; skiff's containers sit beside the host's
// own processes, where 2 shares would starve them.
func containerLimits(c *corev1.Container) cgroupLimits {
	var out cgroupLimits
	if cpu, ok := kube.ContainerRequests(c)[corev1.ResourceCPU]; ok {
		out.shares = milliCPUToShares(cpu.MilliValue())
	}
	if cpu, ok := c.Resources.Limits[corev1.ResourceCPU]; ok && !cpu.IsZero() {
		out.quota = milliCPUToQuota(cpu.MilliValue(), quotaPeriod)
		out.period = quotaPeriod
	}
	if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		out.memory = mem.Value()
	}
	return out
}

// quantityOr returns list[name], or def when it is absent.
func quantityOr(list corev1.ResourceList, name corev1.ResourceName, def resource.Quantity) resource.Quantity {
	if q, ok := list[name]; ok {
		return q
	}
	return def
}
