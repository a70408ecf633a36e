package podworker

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
)

// Metrics are the kubelet's metrics the pod worker keeps, with the names,
// labels and buckets of Kubernetes 1.34's pkg/kubelet/metrics.
type Metrics struct {
	podStartSLI *prometheus.HistogramVec
	imagePull   *prometheus.HistogramVec

	operations        *prometheus.CounterVec
	operationDuration *prometheus.HistogramVec
	operationErrors   *prometheus.CounterVec
}

// NewMetrics creates the pod worker's metrics and registers them with reg
// (nil = kept unregistered). A nil *Metrics records nothing.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		podStartSLI: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pod_start_sli_duration_seconds",
			Help:    "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch",
			Buckets: []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
		}, []string{}),
		imagePull: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "image_pull_duration_seconds", Help: "Duration in seconds to pull an image.",
			Buckets: []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
		}, []string{"image_size_in_bytes"}),
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "runtime_operations_total", Help: "Cumulative number of runtime operations by operation type.",
		}, []string{"operation_type"}),
		operationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "runtime_operations_duration_seconds", Help: "Duration in seconds of runtime operations. Broken down by operation type.",
			Buckets: prometheus.ExponentialBuckets(.005, 2.5, 14),
		}, []string{"operation_type"}),
		operationErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "runtime_operations_errors_total", Help: "Cumulative number of runtime operation errors by operation type.",
		}, []string{"operation_type"}),
	}
	if reg != nil {
		reg.MustRegister(m.podStartSLI, m.imagePull, m.operations, m.operationDuration, m.operationErrors)
	}
	return m
}

// observePull records a pull that took took and brought an image of size
// bytes (0 when unknown).
func (m *Metrics) observePull(took time.Duration, size int64) {
	if m == nil {
		return
	}
	m.imagePull.WithLabelValues(imageSizeBucket(size)).Observe(took.Seconds())
}

// observeOperation records a runtime operation that started at start and
// ended (now) with *err.
func (m *Metrics) observeOperation(operation string, start time.Time, err *error) {
	if m == nil {
		return
	}
	m.operations.WithLabelValues(operation).Inc()
	m.operationDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
	if *err != nil {
		m.operationErrors.WithLabelValues(operation).Inc()
	}
}

// imageSizeBucket is the image_size_in_bytes label of a pull (the kubelet's
// GetImageSizeBucket): "N/A" when unknown, else the range it falls in.
func imageSizeBucket(size int64) string {
	const mb, gb = 1 << 20, 1 << 30
	bounds := []struct {
		above int64
		label string
	}{
		{100 * gb, "GT100GB"}, {60 * gb, "60GB-100GB"}, {40 * gb, "40GB-60GB"}, {30 * gb, "30GB-40GB"},
		{20 * gb, "20GB-30GB"}, {10 * gb, "10GB-20GB"}, {5 * gb, "5GB-10GB"}, {1 * gb, "1GB-5GB"},
		{500 * mb, "500MB-1GB"}, {100 * mb, "100MB-500MB"}, {10 * mb, "10MB-100MB"}, {0, "0-10MB"},
	}
	if size <= 0 {
		return "N/A"
	}
	for _, b := range bounds {
		if size > b.above {
			return b.label
		}
	}
	return "0-10MB"
}

// startTracker follows one pod toward the pod start SLI: the pulls of its
// images, and whether its start was recorded (once per pod, as the
// kubelet's pod startup latency tracker).
type startTracker struct {
	mu                  sync.Mutex
	firstPull, lastPull time.Time // start of the first pull, end of the last
	recorded            bool
}

// pulled notes a pull of the pod's that ran from start to end.
func (t *startTracker) pulled(start, end time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.firstPull.IsZero() {
		t.firstPull = start
	}
	t.lastPull = end
}

// observeStatus records the pod start SLI the first time pod's status
// shows every regular container running and started: from the pod's
// creation to now, less the time spent pulling images.
func (m *Metrics) observeStatus(t *startTracker, pod *corev1.Pod, now time.Time) {
	if m == nil || !allStarted(pod) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.recorded {
		return
	}
	t.recorded = true
	took := now.Sub(pod.CreationTimestamp.Time) - t.lastPull.Sub(t.firstPull)
	m.podStartSLI.WithLabelValues().Observe(max(took, 0).Seconds())
}

// allStarted reports whether every regular container of pod is running
// and started (the kubelet's hasPodStartedSLO).
func allStarted(pod *corev1.Pod) bool {
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() {
			return false
		}
	}
	return true
}
