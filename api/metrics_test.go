package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrape reads the API's /metrics with the Prometheus text parser.
func scrape(t *testing.T, ts *testServer) map[string]*dto.MetricFamily {
	t.Helper()
	r := ts.mustDo(t, "GET", MetricsPath, "")
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(strings.NewReader(r.body))
	if err != nil {
		t.Fatalf("parsing the scrape: %v\n%s", err, r.body)
	}
	return families
}

// counterValue is the value of the sample of family whose labels include
// want; -1 when there is none.
func counterValue(families map[string]*dto.MetricFamily, family string, want map[string]string) float64 {
	f := families[family]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue()
		}
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}

func TestRequestMetrics(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", "/api/v1/namespaces/default/pods", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	ts.mustDo(t, "GET", "/api/v1/namespaces/default/pods", "")
	ts.mustDo(t, "GET", "/api/v1/namespaces/default/pods/p", "")
	ts.do(t, "GET", "/api/v1/namespaces/default/pods/nope", "")
	ts.mustDo(t, "GET", "/apis/batch/v1/jobs", "")
	ts.mustDo(t, "GET", "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1", "")
	ts.mustDo(t, "GET", "/api/v1/namespaces/default/pods?dryRun=All", "")
	for _, made := range []string{"/api/v1/made-up", "/apis/made.up/v9/things", "/api/v1/namespaces/default/pods/p/made-up", "/api/v2/pods"} {
		ts.do(t, "GET", made, "")
	}
	families := scrape(t, ts)
	for _, m := range families["apiserver_request_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if strings.Contains(l.GetValue(), "made") || l.GetValue() == "v2" {
				t.Errorf("a series for a path that serves nothing: %v", m.GetLabel())
			}
		}
	}
	tests := map[string]struct {
		labels map[string]string
		want   float64
	}{
		"create":          {map[string]string{"verb": "POST", "resource": "pods", "scope": "resource", "code": "201", "component": "apiserver"}, 1},
		"list":            {map[string]string{"verb": "LIST", "resource": "pods", "scope": "namespace", "code": "200", "dry_run": ""}, 1},
		"list, dry run":   {map[string]string{"verb": "LIST", "resource": "pods", "dry_run": "All"}, 1},
		"get":             {map[string]string{"verb": "GET", "resource": "pods", "scope": "resource", "code": "200"}, 1},
		"get, not found":  {map[string]string{"verb": "GET", "resource": "pods", "code": "404"}, 1},
		"cluster list":    {map[string]string{"verb": "LIST", "group": "batch", "version": "v1", "resource": "jobs", "scope": "cluster"}, 1},
		"watch":           {map[string]string{"verb": "WATCH", "resource": "pods", "scope": "namespace"}, 1},
		"no non-resource": {map[string]string{"resource": "", "subresource": "/metrics"}, -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := counterValue(families, "apiserver_request_total", tc.labels); got != tc.want {
				t.Errorf("apiserver_request_total%v = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
	if got := counterValue(families, "apiserver_request_duration_seconds", map[string]string{"verb": "WATCH", "resource": "pods"}); got != 1 {
		t.Errorf("apiserver_request_duration_seconds of the watch: %v observations, want 1", got)
	}
}

func TestMetricsVerb(t *testing.T) {
	tests := map[string]struct {
		method, path, contentType, want string
	}{
		"get":               {"GET", "/api/v1/namespaces/d/pods/p", "", "GET"},
		"list":              {"GET", "/api/v1/namespaces/d/pods", "", "LIST"},
		"watch":             {"GET", "/api/v1/namespaces/d/pods?watch=1", "", "WATCH"},
		"legacy watch":      {"GET", "/api/v1/watch/namespaces/d/pods", "", "WATCH"},
		"create":            {"POST", "/apis/batch/v1/namespaces/d/jobs", "", "POST"},
		"update":            {"PUT", "/apis/batch/v1/namespaces/d/jobs/j", "", "PUT"},
		"patch":             {"PATCH", "/apis/batch/v1/namespaces/d/jobs/j", "application/merge-patch+json", "PATCH"},
		"apply":             {"PATCH", "/apis/batch/v1/namespaces/d/jobs/j", "application/apply-patch+yaml", "APPLY"},
		"delete":            {"DELETE", "/apis/batch/v1/namespaces/d/jobs/j", "", "DELETE"},
		"delete collection": {"DELETE", "/apis/batch/v1/namespaces/d/jobs", "", "DELETECOLLECTION"},
		"log":               {"GET", "/api/v1/namespaces/d/pods/p/log", "", "CONNECT"},
		"exec":              {"POST", "/api/v1/namespaces/d/pods/p/exec", "", "CONNECT"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, _ := http.NewRequest(tc.method, "http://x"+tc.path, nil)
			r.Header.Set("Content-Type", tc.contentType)
			if got := metricsVerb(r, parseRequestInfo(r)); got != tc.want {
				t.Errorf("verb %q, want %q", got, tc.want)
			}
		})
	}
}

// blockingCollector holds a scrape until released.
type blockingCollector struct {
	desc     *prometheus.Desc
	entered  chan struct{}
	released chan struct{}
}

func (c *blockingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }
func (c *blockingCollector) Collect(ch chan<- prometheus.Metric) {
	c.entered <- struct{}{}
	<-c.released
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}

// A scrape that takes its time takes no seat of the API's: with one read
// allowed at once, reads are served while it runs.
func TestSlowScrapeDoesNotBlockTheAPI(t *testing.T) {
	reg := prometheus.NewRegistry()
	slow := &blockingCollector{desc: prometheus.NewDesc("slow", "a slow collector", nil, nil),
		entered: make(chan struct{}, 1), released: make(chan struct{})}
	reg.MustRegister(slow)
	ts := newTestServerWith(t, Config{Metrics: reg, MaxRequestsInFlight: 1})
	done := make(chan response, 1)
	go func() { done <- ts.do(t, "GET", MetricsPath, "") }()
	select {
	case <-slow.entered:
	case <-time.After(time.Minute):
		t.Fatal("the scrape never reached the collector")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, path := range []string{"/api/v1/namespaces/default/pods", "/version", "/readyz"} {
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s while a scrape runs: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s while a scrape runs: %d", path, resp.StatusCode)
		}
	}
	close(slow.released)
	if r := <-done; r.code != http.StatusOK || !strings.Contains(r.body, "slow 1") {
		t.Errorf("the scrape: %d %s", r.code, r.body)
	}
}

// BenchmarkRequestMetrics is what counting and timing a request adds to
// it: the middleware around a handler that does nothing.
func BenchmarkRequestMetrics(b *testing.B) {
	h := withRequestMetrics(newRequestMetrics(prometheus.NewRegistry()), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	r, _ := http.NewRequest("GET", "http://x/apis/batch/v1/namespaces/default/jobs/j", nil)
	w := nopWriter{header: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}

type nopWriter struct{ header http.Header }

func (w nopWriter) Header() http.Header         { return w.header }
func (w nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w nopWriter) WriteHeader(int)             {}
