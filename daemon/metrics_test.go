//go:build integration

package daemon_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scrape reads skiffd's /metrics with the Prometheus text parser.
func (s *skiffd) scrape() map[string]*dto.MetricFamily {
	s.t.Helper()
	resp, err := s.get("/metrics")
	if err != nil {
		s.t.Fatalf("scraping /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("scraping /metrics: %s", resp.Status)
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		s.t.Fatalf("parsing the scrape: %v", err)
	}
	return families
}

// matchingMetrics are the samples of family whose labels include want.
func matchingMetrics(families map[string]*dto.MetricFamily, family string, want map[string]string) []*dto.Metric {
	var out []*dto.Metric
next:
	for _, m := range families[family].GetMetric() {
		for _, l := range m.GetLabel() {
			if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
}

// metricValue sums the samples of family whose labels include want: the
// values of counters and gauges, the observation counts of histograms.
func metricValue(families map[string]*dto.MetricFamily, family string, want map[string]string) float64 {
	var sum float64
	for _, m := range matchingMetrics(families, family, want) {
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// TestMetrics scrapes a running skiffd while a Job runs: the Job
// controller's counters move with it, the API counts the requests made,
// and the kubelet's, the store's, Go's and the process's metrics are there.
func TestMetrics(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--metric-resolution", "100ms")
	s.start()
	ctx := context.Background()
	nonIndexed := map[string]string{"completion_mode": "NonIndexed"}
	job, err := s.client.BatchV1().Jobs("default").Create(ctx, shJob("steps", "sleep 2", 3, 1, 0, corev1.RestartPolicyNever), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The kubelet's gauges see a pod run.
	waitFor(t, 90*time.Second, "kubelet_running_pods 1 and a running container", func() (bool, error) {
		f := s.scrape()
		return metricValue(f, "kubelet_running_pods", nil) == 1 &&
			metricValue(f, "kubelet_running_containers", map[string]string{"container_state": "running"}) == 1, nil
	})

	// Midway: one pod counted, not three (the pods run one after the
	// other, for 2 s each).
	var mid map[string]*dto.MetricFamily
	var midFinished float64
	waitFor(t, 90*time.Second, "the first pod counted", func() (bool, error) {
		mid = s.scrape()
		midFinished = metricValue(mid, "job_controller_job_pods_finished_total", map[string]string{"completion_mode": "NonIndexed", "result": "succeeded"})
		return midFinished >= 1, nil
	})
	midSyncs := metricValue(mid, "job_controller_job_syncs_total", nonIndexed)
	if midFinished < 1 || midFinished >= 3 {
		t.Errorf("midway, job_pods_finished_total{succeeded} = %v, want 1 or 2", midFinished)
	}
	if got := metricValue(mid, "job_controller_jobs_finished_total", nil); got != 0 {
		t.Errorf("midway, jobs_finished_total = %v, want 0", got)
	}

	waitJob(t, s.client, "default", job.Name, "Complete", 90*time.Second)
	const gets = 5
	for range gets {
		if _, err := s.client.BatchV1().Jobs("default").Get(ctx, job.Name, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// NOTE: as in Kubernetes, a sync's metrics are recorded once its
	// write is committed: a client can see the Job complete a moment before.
	var end map[string]*dto.MetricFamily
	waitFor(t, 30*time.Second, "jobs_finished_total to count the Job", func() (bool, error) {
		end = s.scrape()
		return metricValue(end, "job_controller_jobs_finished_total", nil) == 1, nil
	})
	checks := map[string]struct {
		family string
		labels map[string]string
		want   func(float64) bool
	}{
		"pods created": {"job_controller_job_pods_creation_total", map[string]string{"reason": "new", "status": "succeeded"},
			func(v float64) bool { return v == 3 }},
		"pods counted": {"job_controller_job_pods_finished_total", map[string]string{"completion_mode": "NonIndexed", "result": "succeeded"},
			func(v float64) bool { return v == 3 }},
		"job finished": {"job_controller_jobs_finished_total", map[string]string{"completion_mode": "NonIndexed", "result": "succeeded", "reason": "CompletionsReached"},
			func(v float64) bool { return v == 1 }},
		"more syncs": {"job_controller_job_syncs_total", map[string]string{"completion_mode": "NonIndexed", "result": "success"},
			func(v float64) bool { return v > midSyncs }},
		"pods_created syncs": {"job_controller_job_syncs_total", map[string]string{"action": "pods_created"},
			func(v float64) bool { return v >= 3 }},
		"sync durations": {"job_controller_job_sync_duration_seconds", nonIndexed,
			func(v float64) bool { return v > midSyncs }},
		"finished pods with the finalizer": {"job_controller_terminated_pods_tracking_finalizer_total", map[string]string{"event": "add"},
			func(v float64) bool { return v >= 3 }},
		"job created": {"apiserver_request_total", map[string]string{"verb": "POST", "group": "batch", "resource": "jobs", "scope": "resource", "code": "201"},
			func(v float64) bool { return v == 1 }},
		"job read": {"apiserver_request_total", map[string]string{"verb": "GET", "group": "batch", "resource": "jobs", "code": "200"},
			func(v float64) bool { return v >= gets }},
		"request durations": {"apiserver_request_duration_seconds", map[string]string{"verb": "POST", "resource": "jobs"},
			func(v float64) bool { return v == 1 }},
		"pods started": {"kubelet_pod_start_sli_duration_seconds", nil, func(v float64) bool { return v >= 1 }},
		"sandboxes run": {"kubelet_runtime_operations_total", map[string]string{"operation_type": "run_podsandbox"},
			func(v float64) bool { return v >= 3 }},
		"containers created": {"kubelet_runtime_operations_total", map[string]string{"operation_type": "create_container"},
			func(v float64) bool { return v >= 3 }},
		"container start durations": {"kubelet_runtime_operations_duration_seconds", map[string]string{"operation_type": "start_container"},
			func(v float64) bool { return v >= 3 }},
		"no failed starts": {"kubelet_runtime_operations_errors_total", map[string]string{"operation_type": "start_container"},
			func(v float64) bool { return v == 0 }},
		"store commits":   {"etcd_disk_backend_commit_duration_seconds", nil, func(v float64) bool { return v > 0 }},
		"store reads":     {"skiff_store_transaction_duration_seconds", map[string]string{"mode": "read"}, func(v float64) bool { return v > 0 }},
		"store size":      {"etcd_mvcc_db_total_size_in_bytes", nil, func(v float64) bool { return v > 4096 }},
		"goroutines":      {"go_goroutines", nil, func(v float64) bool { return v > 10 }},
		"resident memory": {"process_resident_memory_bytes", nil, func(v float64) bool { return v > 1<<20 }},
	}
	for name, c := range checks {
		if got := metricValue(end, c.family, c.labels); !c.want(got) {
			t.Errorf("%s: %s%v = %v", name, c.family, c.labels, got)
		}
	}
	if got := metricValue(end, "job_controller_job_pods_finished_total", map[string]string{"result": "succeeded"}); got <= midFinished {
		t.Errorf("job_pods_finished_total did not move: %v midway, %v at the end", midFinished, got)
	}
}
