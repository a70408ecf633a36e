package daemon

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/skiff-sh/skiff/api"
	"github.com/skiff-sh/skiff/daemon/jobcontroller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet/podworker"
	"github.com/skiff-sh/skiff/kubelet/stats"
)

// BenchmarkScrape measures one scrape of /metrics with every metric skiffd
// registers, after 50 Jobs went through the API and the Job controller
// (their syncs and pod creations, the requests' series of every verb).
func BenchmarkScrape(b *testing.B) {
	logrus.SetLevel(logrus.WarnLevel)
	reg := withProcessMetrics(nil)
	store, err := db.Open(filepath.Join(b.TempDir(), "skiff.db"), db.WithMetrics(reg))
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs := jobcontroller.New(jobcontroller.Config{Store: store, Metrics: jobcontroller.NewMetrics(reg),
		Pods: kube.PodStrategy{NodeName: "node"}})
	done := make(chan error, 1)
	go func() { done <- jobs.Run(ctx) }()
	podworker.NewMetrics(reg)
	stats.New(stats.Config{Metrics: reg})
	h := api.New(api.Config{Store: store, NodeName: "node", Metrics: reg})

	do := func(method, path, body string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	const n = 50
	for i := range n {
		job := fmt.Sprintf(`{"metadata":{"name":"j%d"},"spec":{"completions":2,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`, i)
		for _, r := range []struct{ method, path, body string }{
			{"POST", "/apis/batch/v1/namespaces/default/jobs", job},
			{"GET", fmt.Sprintf("/apis/batch/v1/namespaces/default/jobs/j%d", i), ""},
			{"GET", "/apis/batch/v1/namespaces/default/jobs", ""},
			{"GET", "/api/v1/pods", ""},
			{"PATCH", fmt.Sprintf("/apis/batch/v1/namespaces/default/jobs/j%d", i), `{"metadata":{"labels":{"a":"b"}}}`},
			{"GET", "/api/v1/namespaces/default/pods/nope", ""},
		} {
			do(r.method, r.path, r.body)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		pods, _, err := store.List(db.Pods, "", nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(pods) >= n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d pods created, want %d", len(pods), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	families, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	series := 0
	for _, f := range families {
		series += len(f.GetMetric())
	}

	var size int
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", api.MetricsPath, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("scrape: %d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "bytes/scrape")
	b.ReportMetric(float64(series), "series")
	cancel()
	<-done
}
