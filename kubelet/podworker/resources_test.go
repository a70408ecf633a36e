package podworker

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func TestMilliCPU(t *testing.T) {
	shares := map[int64]uint64{0: 2, 1: 2, 100: 102, 250: 256, 1000: 1024, 1500: 1536, 300000: 262144}
	for milli, want := range shares {
		if got := milliCPUToShares(milli); got != want {
			t.Errorf("milliCPUToShares(%d) = %d, want %d", milli, got, want)
		}
	}
	quota := map[int64]int64{0: 0, 1: 1000, 5: 1000, 250: 25000, 1500: 150000}
	for milli, want := range quota {
		if got := milliCPUToQuota(milli, quotaPeriod); got != want {
			t.Errorf("milliCPUToQuota(%d) = %d, want %d", milli, got, want)
		}
	}
}

func TestContainerLimits(t *testing.T) {
	tests := map[string]struct {
		res  corev1.ResourceRequirements
		want cgroupLimits
	}{
		"best effort":                      {want: cgroupLimits{}},
		"request only":                     {res: corev1.ResourceRequirements{Requests: rl("cpu", "500m", "memory", "1Gi")}, want: cgroupLimits{shares: 512}},
		"limit only: request is the limit": {res: corev1.ResourceRequirements{Limits: rl("cpu", "2", "memory", "64Mi")}, want: cgroupLimits{shares: 2048, quota: 200000, period: 100000, memory: 64 << 20}},
		"both":                             {res: corev1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("cpu", "1")}, want: cgroupLimits{shares: 102, quota: 100000, period: 100000}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := containerLimits(&corev1.Container{Resources: tc.res})
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(cgroupLimits{})); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNewAllocatableStorage(t *testing.T) {
	tests := map[string]struct {
		capacity, reserved string
		req                string
		want               []string
	}{
		"capacity minus reserve fits":   {capacity: "10Gi", reserved: "2Gi", req: "8Gi"},
		"capacity minus reserve":        {capacity: "10Gi", reserved: "2Gi", req: "9Gi", want: []string{"Insufficient ephemeral-storage"}},
		"unknown capacity is unchecked": {capacity: "0", reserved: "2Gi", req: "100Ti"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := New(Config{
				CPU: resource.MustParse("2"), Memory: resource.MustParse("1Gi"),
				EphemeralStorage: resource.MustParse(tc.capacity), ReservedEphemeralStorage: resource.MustParse(tc.reserved),
			})
			// Enqueued before the scheduler starts: only told why it waits.
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: rl("ephemeral-storage", tc.req)}}}}}
			got := m.sched.WhyWaiting(m.sched.Enqueue(pod))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
