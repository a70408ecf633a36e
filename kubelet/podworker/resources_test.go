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

func TestPodRequests(t *testing.T) {
	c := func(name string, req corev1.ResourceList, sidecar bool) corev1.Container {
		out := corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req}}
		if sidecar {
			out.RestartPolicy = sidecarPolicy
		}
		return out
	}
	tests := map[string]struct {
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		"sum of containers": {
			spec: corev1.PodSpec{Containers: []corev1.Container{c("a", rl("cpu", "100m", "memory", "1Mi"), false), c("b", rl("cpu", "200m"), false)}},
			want: rl("cpu", "300m", "memory", "1Mi"),
		},
		"a bigger init container": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{c("i", rl("cpu", "1", "memory", "1Mi"), false)},
				Containers:     []corev1.Container{c("a", rl("cpu", "100m", "memory", "2Mi"), false)},
			},
			want: rl("cpu", "1", "memory", "2Mi"),
		},
		"sidecars add up, and to later init containers": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{c("s", rl("cpu", "500m"), true), c("i", rl("cpu", "1"), false)},
				Containers:     []corev1.Container{c("a", rl("cpu", "100m"), false)},
			},
			want: rl("cpu", "1500m"),
		},
		"overhead": {
			spec: corev1.PodSpec{Containers: []corev1.Container{c("a", rl("cpu", "100m"), false)}, Overhead: rl("cpu", "10m")},
			want: rl("cpu", "110m"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := podRequests(&tc.spec)
			for name, q := range tc.want {
				if g := got[name]; g.Cmp(q) != 0 {
					t.Errorf("%s = %s, want %s", name, g.String(), q.String())
				}
			}
			if len(got) != len(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
