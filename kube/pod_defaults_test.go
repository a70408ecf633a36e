package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestDefaultPod: the rules of kube's SetDefaults_Pod
// (pkg/apis/core/v1/defaults.go) for requests, host network ports and
// enableServiceLinks.
func TestDefaultPod(t *testing.T) {
	tests := map[string]struct {
		spec corev1.PodSpec
		want func(*corev1.PodSpec)
	}{
		"requests follow limits": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Limits: rl("cpu", "100m", "memory", "1Gi")}}}},
			want: func(s *corev1.PodSpec) { s.Containers[0].Resources.Requests = rl("cpu", "100m", "memory", "1Gi") },
		},
		"a request is kept": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Limits: rl("cpu", "1", "memory", "1Gi"), Requests: rl("cpu", "100m")}}}},
			want: func(s *corev1.PodSpec) { s.Containers[0].Resources.Requests = rl("cpu", "100m", "memory", "1Gi") },
		},
		"init containers too": {
			spec: corev1.PodSpec{InitContainers: []corev1.Container{{Resources: corev1.ResourceRequirements{
				Limits: rl("memory", "1Gi")}}}},
			want: func(s *corev1.PodSpec) { s.InitContainers[0].Resources.Requests = rl("memory", "1Gi") },
		},
		"no limits, no requests": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{}}},
			want: func(*corev1.PodSpec) {},
		},
		"host network ports": {
			spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Ports: []corev1.ContainerPort{
				{ContainerPort: 8080}, {ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP}}}}},
			want: func(s *corev1.PodSpec) { s.Containers[0].Ports[0].HostPort = 8080 },
		},
		"pod network ports keep no host port": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
			want: func(*corev1.PodSpec) {},
		},
		"a negative grace period becomes 1": {
			spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](-1), Containers: []corev1.Container{{}}},
			want: func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](1) },
		},
		"enableServiceLinks false is kept": {
			spec: corev1.PodSpec{EnableServiceLinks: ptr.To(false), Containers: []corev1.Container{{}}},
			want: func(*corev1.PodSpec) {},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: *tc.spec.DeepCopy()}
			defaultPod(pod)
			want := tc.spec.DeepCopy()
			defaultPodSpec(want)
			if want.EnableServiceLinks == nil {
				want.EnableServiceLinks = ptr.To(true)
			}
			tc.want(want)
			if diff := cmp.Diff(*want, pod.Spec); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// TestPreparePodForUpdateDefaultsTheStoredPod: an update that sends back a
// pod stored before its defaults existed changes nothing.
func TestPreparePodForUpdateDefaultsTheStoredPod(t *testing.T) {
	old := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35",
		Resources: corev1.ResourceRequirements{Limits: rl("cpu", "1")}}}}}
	pod := old.DeepCopy()
	PreparePodForUpdate(pod, old)
	if errs := ValidatePodUpdate(pod, old); len(errs) > 0 {
		t.Errorf("ValidatePodUpdate: %v", errs)
	}
}
