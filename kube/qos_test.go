package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// rl is a resource list from name, quantity pairs.
func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

// TestQOSClass runs the cases of kube's TestComputePodQOS
// (pkg/apis/core/v1/helper/qos) and skiff's own.
func TestQOSClass(t *testing.T) {
	c := func(req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	cs := func(list ...corev1.Container) []corev1.Container { return list }
	tests := map[string]struct {
		containers []corev1.Container
		init       []corev1.Container
		pod        *corev1.ResourceRequirements
		want       corev1.PodQOSClass
	}{
		// kube's cases
		"guaranteed": {containers: cs(c(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "100m", "memory", "100Mi"))),
			want: corev1.PodQOSGuaranteed},
		"guaranteed-guaranteed": {containers: cs(c(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "100m", "memory", "100Mi")),
			c(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "100m", "memory", "100Mi"))), want: corev1.PodQOSGuaranteed},
		"best-effort-best-effort": {containers: cs(c(nil, nil), c(nil, nil)), want: corev1.PodQOSBestEffort},
		"best-effort":             {containers: cs(c(nil, nil)), want: corev1.PodQOSBestEffort},
		"best-effort-burstable":   {containers: cs(c(nil, nil), c(rl("cpu", "1"), rl("cpu", "2"))), want: corev1.PodQOSBurstable},
		"best-effort-guaranteed": {containers: cs(c(nil, nil), c(rl("cpu", "10m", "memory", "100Mi"), rl("cpu", "10m", "memory", "100Mi"))),
			want: corev1.PodQOSBurstable},
		"burstable-cpu-guaranteed-memory": {containers: cs(c(rl("memory", "100Mi"), rl("memory", "100Mi"))), want: corev1.PodQOSBurstable},
		"burstable-no-limits":             {containers: cs(c(rl("cpu", "100m", "memory", "100Mi"), nil)), want: corev1.PodQOSBurstable},
		"burstable-guaranteed": {containers: cs(c(rl("cpu", "1", "memory", "100Mi"), rl("cpu", "2", "memory", "100Mi")),
			c(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "100m", "memory", "100Mi"))), want: corev1.PodQOSBurstable},
		"burstable-unbounded-but-requests-match-limits": {containers: cs(c(rl("cpu", "100m", "memory", "100Mi"), rl("cpu", "200m", "memory", "200Mi")),
			c(rl("cpu", "100m", "memory", "100Mi"), nil)), want: corev1.PodQOSBurstable},
		"burstable-1": {containers: cs(c(rl("cpu", "10m", "memory", "100Mi"), rl("cpu", "100m", "memory", "200Mi"))), want: corev1.PodQOSBurstable},
		"burstable-2": {containers: cs(c(rl("cpu", "0", "memory", "0"), rl("cpu", "100m", "memory", "200Mi"))), want: corev1.PodQOSBurstable},
		"best-effort-hugepages": {containers: cs(c(rl("cpu", "0", "memory", "0", "hugepages-2Mi", "1Gi"), rl("cpu", "0", "memory", "0", "hugepages-2Mi", "1Gi"))),
			want: corev1.PodQOSBestEffort},
		"init-container": {containers: cs(c(nil, nil)), init: cs(c(rl("cpu", "10m", "memory", "100Mi"), rl("cpu", "100m", "memory", "200Mi"))),
			want: corev1.PodQOSBurstable},
		"guaranteed-with-pod-level-resources": {containers: cs(c(nil, nil)),
			pod: &corev1.ResourceRequirements{Requests: rl("cpu", "10m", "memory", "100Mi"), Limits: rl("cpu", "10m", "memory", "100Mi")}, want: corev1.PodQOSGuaranteed},
		"guaranteed-with-pod-and-container-level-resources": {containers: cs(c(rl("cpu", "3m", "memory", "10Mi"), rl("cpu", "5m", "memory", "20Mi"))),
			pod: &corev1.ResourceRequirements{Requests: rl("cpu", "10m", "memory", "100Mi"), Limits: rl("cpu", "10m", "memory", "100Mi")}, want: corev1.PodQOSGuaranteed},
		"burstable-with-pod-level-resources": {containers: cs(c(nil, nil)),
			pod: &corev1.ResourceRequirements{Requests: rl("cpu", "10m", "memory", "10Mi"), Limits: rl("cpu", "20m", "memory", "50Mi")}, want: corev1.PodQOSBurstable},
		"burstable-with-pod-and-container-level-resources": {containers: cs(c(rl("cpu", "5m", "memory", "10Mi"), rl("cpu", "5m", "memory", "10Mi"))),
			pod: &corev1.ResourceRequirements{Requests: rl("cpu", "10m", "memory", "10Mi"), Limits: rl("cpu", "20m", "memory", "50Mi")}, want: corev1.PodQOSBurstable},
		"burstable-with-pod-and-container-level-requests": {containers: cs(c(rl("cpu", "5m", "memory", "10Mi"), nil)),
			pod: &corev1.ResourceRequirements{Requests: rl("cpu", "10m", "memory", "10Mi")}, want: corev1.PodQOSBurstable},
		"burstable-with-pod-and-container-level-resources-2": {containers: cs(c(rl("cpu", "5m", "memory", "10Mi"), nil),
			c(rl("cpu", "5m", "memory", "10Mi"), rl("cpu", "5m", "memory", "10Mi"))),
			pod: &corev1.ResourceRequirements{Requests: rl("cpu", "10m", "memory", "10Mi"), Limits: rl("cpu", "5m")}, want: corev1.PodQOSBurstable},

		// skiff's: what the API server's defaulting and the cpu-and-memory rule mean
		"only other resources":          {containers: cs(c(rl("ephemeral-storage", "1Gi"), nil)), want: corev1.PodQOSBestEffort},
		"limits only (requests follow)": {containers: cs(c(nil, rl("cpu", "1", "memory", "1Gi"))), want: corev1.PodQOSGuaranteed},
		"no memory limit":               {containers: cs(c(nil, rl("cpu", "1"))), want: corev1.PodQOSBurstable},
		"one best-effort container":     {containers: cs(c(nil, rl("cpu", "1", "memory", "1Gi")), c(nil, nil)), want: corev1.PodQOSBurstable},
		"init container without limits": {containers: cs(c(nil, rl("cpu", "1", "memory", "1Gi"))), init: cs(c(nil, nil)),
			want: corev1.PodQOSBurstable},
		"only requests": {containers: cs(c(rl("memory", "1Gi"), nil)), want: corev1.PodQOSBurstable},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			spec := &corev1.PodSpec{Containers: tc.containers, InitContainers: tc.init, Resources: tc.pod}
			if got := QOSClass(spec); got != tc.want {
				t.Errorf("QOSClass = %s, want %s", got, tc.want)
			}
		})
	}
}
