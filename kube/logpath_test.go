package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestContainerLogPath(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "job-a-x7k2p", UID: "0a1b"}}
	if got, want := PodLogDir("/var/lib/skiff/logs", pod), "/var/lib/skiff/logs/default_job-a-x7k2p_0a1b"; got != want {
		t.Errorf("PodLogDir = %q, want %q", got, want)
	}
	if got, want := ContainerLogPath("/var/lib/skiff/logs", pod, "main", 3), "/var/lib/skiff/logs/default_job-a-x7k2p_0a1b/main/3.log"; got != want {
		t.Errorf("ContainerLogPath = %q, want %q", got, want)
	}
}
