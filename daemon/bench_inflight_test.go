//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkConcurrentLists: with 5000 pods stored (10 Jobs of 500 pods
// that wait for admission), 100 clients list all pods as fast as they can
// for 20 s while a probe GETs one pod each second. It reports skiffd's
// peak anonymous memory, the probe's median latency, the lists served per
// second and how many requests were answered 429, with the default
// --max-requests-inflight and without a limit.
func BenchmarkConcurrentLists(b *testing.B) {
	for name, flags := range map[string][]string{"limited": nil, "unlimited": {"--max-requests-inflight", "0"}} {
		b.Run(name, func(b *testing.B) { concurrentLists(b, flags) })
	}
}

func concurrentLists(b *testing.B, flags []string) {
	const clients, jobs = 100, 10
	for range b.N {
		s := newSkiffd(b, flags...)
		s.start()
		ctx := context.Background()
		for i := range jobs {
			job := shJob(fmt.Sprintf("flood-%d", i), "true", 1, 500, 0, corev1.RestartPolicyNever)
			job.Spec.Completions = nil
			job.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
			if _, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		waitFor(b, 5*time.Minute, "5000 pods", func() (bool, error) {
			pods, err := s.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil && pods.RemainingItemCount != nil && *pods.RemainingItemCount+1 >= 5000, err
		})
		var stop atomic.Bool
		var lists, tooMany atomic.Int64
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for !stop.Load() {
					resp, err := s.get("/api/v1/pods")
					if err != nil {
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					switch resp.StatusCode {
					case http.StatusOK:
						lists.Add(1)
					case http.StatusTooManyRequests:
						tooMany.Add(1)
					}
				}
			})
		}
		var lat []time.Duration
		var peak int64
		for range 20 {
			time.Sleep(time.Second)
			start := time.Now()
			if resp, err := s.get("/api/v1/namespaces/default/pods/nope"); err == nil {
				resp.Body.Close()
			}
			lat = append(lat, time.Since(start))
			peak = max(peak, rssOf(b, s.cmd.Process.Pid))
		}
		stop.Store(true)
		wg.Wait()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		b.ReportMetric(float64(peak>>20), "peak-MiB")
		b.ReportMetric(ms(lat[len(lat)/2]), "probe-ms")
		b.ReportMetric(float64(lists.Load())/20, "lists/s")
		b.ReportMetric(float64(tooMany.Load()), "429s")
		s.stop()
	}
}
