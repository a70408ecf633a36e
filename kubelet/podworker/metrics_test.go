package podworker

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestImageSizeBucket(t *testing.T) {
	tests := map[int64]string{
		0: "N/A", 1: "0-10MB", 10 << 20: "0-10MB", 10<<20 + 1: "10MB-100MB", 700 << 20: "500MB-1GB",
		3 << 30: "1GB-5GB", 100 << 30: "60GB-100GB", 101 << 30: "GT100GB",
	}
	for size, want := range tests {
		if got := imageSizeBucket(size); got != want {
			t.Errorf("imageSizeBucket(%d) = %q, want %q", size, got, want)
		}
	}
}

// The pod start SLI is recorded once, when every container runs, without
// the time spent pulling.
func TestPodStartSLI(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	created := time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(created)}}},
			{Name: "b", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
		}},
	}
	var tr startTracker
	tr.pulled(created.Add(time.Second), created.Add(3*time.Second))
	tr.pulled(created.Add(4*time.Second), created.Add(9*time.Second))
	m.observeStatus(&tr, pod, created.Add(10*time.Second))
	if n := testutil.CollectAndCount(m.podStartSLI); n != 0 {
		t.Fatalf("recorded with a container waiting")
	}
	pod.Status.ContainerStatuses[1].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(created)}}
	m.observeStatus(&tr, pod, created.Add(12*time.Second))
	m.observeStatus(&tr, pod, created.Add(13*time.Second))
	// 12 s from creation, less the 8 s from the first pull's start to the
	// last one's end: 4 s, observed once.
	got, err := testutil.CollectAndFormat(m.podStartSLI, expfmt.TypeTextPlain, "kubelet_pod_start_sli_duration_seconds")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`_bucket{le="3"} 0`, `_bucket{le="4"} 1`, `_count 1`, `_sum 4`} {
		if !strings.Contains(string(got), "kubelet_pod_start_sli_duration_seconds"+line) {
			t.Errorf("want %s in\n%s", line, got)
		}
	}
}
