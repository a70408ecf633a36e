package api

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"
)

// MetricsPath is where the API serves its Prometheus metrics.
const MetricsPath = "/metrics"

// maxScrapes is how many scrapes of MetricsPath are served at once (503
// beyond): a scrape takes no API seat, so it cannot starve requests, and
// scrapes cannot pile up either.
const maxScrapes = 2

// requestMetrics are kube-apiserver's request metrics (k8s.io/apiserver's
// endpoints/metrics), with its names, labels and buckets.
type requestMetrics struct {
	total       *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	longRunning *prometheus.GaugeVec
}

func newRequestMetrics(reg prometheus.Registerer) *requestMetrics {
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "apiserver", Name: "request_total",
			Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "apiserver", Name: "request_duration_seconds",
			Help: "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
				4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "apiserver", Name: "longrunning_requests",
			Help: "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
	}
	reg.MustRegister(m.total, m.duration, m.longRunning)
	return m
}

// withRequestMetrics counts every resource request and observes its
// duration, labelled as kube-apiserver labels them; watches and streams
// are also counted while they are open (apiserver_longrunning_requests).
func withRequestMetrics(m *requestMetrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := parseRequestInfo(r)
		if !info.IsResource || !servedResources[groupVersion{info.APIGroup, info.APIVersion}][info.resourceName()] {
			next.ServeHTTP(w, r)
			return
		}
		verb, scope := metricsVerb(r, info), metricsScope(info)
		if isLongRunning(r) {
			g := m.longRunning.WithLabelValues(verb, info.APIGroup, info.APIVersion, info.Resource, info.Subresource, scope, "apiserver")
			g.Inc()
			defer g.Dec()
		}
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		defer func() {
			code := rec.code
			if code == 0 {
				code = http.StatusOK
			}
			dryRun := metricsDryRun(r)
			m.total.WithLabelValues(verb, dryRun, info.APIGroup, info.APIVersion, info.Resource, info.Subresource, scope, "apiserver", strconv.Itoa(code)).Inc()
			m.duration.WithLabelValues(verb, dryRun, info.APIGroup, info.APIVersion, info.Resource, info.Subresource, scope, "apiserver").Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(rec, r)
	})
}

// servedResources are the resources and subresources ("pods/log") served
// in each group version. Only requests for them are counted, as
// kube-apiserver counts only the routes it installed: a path made up by a
// client makes no series.
var servedResources = func() map[groupVersion]map[string]bool {
	out := map[groupVersion]map[string]bool{}
	for _, gv := range append(slices.Clone(groupVersions), metricsV1beta1) {
		out[gv] = map[string]bool{}
		for _, res := range apiResourceList(gv).APIResources {
			out[gv][res.Name] = true
		}
	}
	return out
}()

// connectSubresources are reported with the verb CONNECT (kube's
// validConnectRequests).
var connectSubresources = []string{"log", "exec", "portforward", "attach", "proxy"}

// metricsVerb is the verb label of a resource request: the upper-case
// verb as kube-apiserver's installer names it (GET, LIST, WATCH, POST,
// PUT, PATCH, APPLY, DELETE, DELETECOLLECTION, CONNECT).
func metricsVerb(r *http.Request, info requestInfo) string {
	if slices.Contains(connectSubresources, info.Subresource) {
		return "CONNECT"
	}
	switch info.Verb {
	case "create":
		return "POST"
	case "update":
		return "PUT"
	case "patch":
		if r.Header.Get("Content-Type") == string(types.ApplyPatchType) {
			return "APPLY"
		}
		return "PATCH"
	}
	return strings.ToUpper(info.Verb)
}

// metricsScope is kube's CleanScope: resource (one object, or a create),
// namespace, or cluster.
func metricsScope(info requestInfo) string {
	switch {
	case info.Name != "" || info.Verb == "create":
		return "resource"
	case info.Namespace != "":
		return "namespace"
	}
	return "cluster"
}

// metricsDryRun is the dry_run label: the request's dryRun values sorted
// and deduplicated ("All"), or "" without any.
func metricsDryRun(r *http.Request) string {
	if !strings.Contains(r.URL.RawQuery, "dryRun") {
		return ""
	}
	values := slices.Clone(r.URL.Query()["dryRun"])
	for _, v := range values {
		if v != "All" {
			return "invalid"
		}
	}
	slices.Sort(values)
	return strings.Join(slices.Compact(values), ",")
}

// metricsHandler serves the registry in Prometheus' text exposition.
func metricsHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		MaxRequestsInFlight: maxScrapes,
		Timeout:             30 * time.Second,
		ErrorHandling:       promhttp.ContinueOnError,
	})
}
