//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// plainSkiffdEnv names a skiffd binary from before TLS (plain HTTP on
// --listen) for BenchmarkTLSCost to compare with; unset, the baseline is
// the same skiffd's unix socket (plain HTTP, the same handler, no TLS).
const plainSkiffdEnv = "SKIFF_PLAIN_SKIFFD"

// BenchmarkTLSCost measures what TLS adds to a request: Job creates (p50,
// p99 of 300 each) and lists of 2000 Jobs (p50 of 20 each), through
// client-go over HTTPS (HTTP/2, the admin's client certificate) and over
// plain HTTP, the two alternating request by request so that both see the
// same load of the machine.
func BenchmarkTLSCost(b *testing.B) {
	const creates, stored, lists = 300, 2000, 20
	for range b.N {
		s := newSkiffd(b)
		s.start()
		secure := s.client
		plain, baseline, shared := plainBaseline(b, s)

		ctx := context.Background()
		var createTimes [2][]time.Duration
		for i := range creates {
			for k, c := range []*kubernetes.Clientset{secure, plain} {
				start := time.Now()
				if _, err := c.BatchV1().Jobs("default").Create(ctx, suspendedJob(fmt.Sprintf("c%d-%d", k, i)), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
				createTimes[k] = append(createTimes[k], time.Since(start))
			}
		}
		// Each store up to 2000 Jobs (one store when the baseline is s's socket).
		fill := map[*kubernetes.Clientset]int{secure: stored - creates, plain: stored - creates}
		if shared {
			fill = map[*kubernetes.Clientset]int{plain: stored - 2*creates}
		}
		for c, n := range fill {
			for i := range n {
				if _, err := c.BatchV1().Jobs("default").Create(ctx, suspendedJob(fmt.Sprintf("l%d", i)), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		}
		var listTimes [2][]time.Duration
		for range lists {
			for k, c := range []*kubernetes.Clientset{secure, plain} {
				start := time.Now()
				l, err := c.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
				if err != nil || len(l.Items) != stored {
					b.Fatalf("list: %v (%d Jobs)", err, len(l.Items))
				}
				listTimes[k] = append(listTimes[k], time.Since(start))
			}
		}
		b.Logf("baseline: %s; load average %s", baseline, loadAverage())
		for k, name := range []string{"https", "plain"} {
			b.ReportMetric(ms(percentile(createTimes[k], 50)), "create-p50-ms-"+name)
			b.ReportMetric(ms(percentile(createTimes[k], 99)), "create-p99-ms-"+name)
			b.ReportMetric(ms(percentile(listTimes[k], 50)), "list2000-p50-ms-"+name)
		}
	}
}

// plainBaseline is a clientset over plain HTTP: a pre-TLS skiffd
// ($SKIFF_PLAIN_SKIFFD) on its own data dir, or else s's unix socket
// (shared: the store is s's).
func plainBaseline(b *testing.B, s *skiffd) (c *kubernetes.Clientset, baseline string, shared bool) {
	cfg := &rest.Config{QPS: 500, Burst: 1000, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
	if bin := os.Getenv(plainSkiffdEnv); bin != "" {
		old := newSkiffd(b)
		old.bin, old.plainHTTP = bin, true
		old.start()
		cfg.Host = "http://" + old.addr
		old.client = kubernetes.NewForConfigOrDie(cfg)
		return old.client, "a pre-TLS skiffd (" + bin + ") over plain HTTP on TCP", false
	}
	cfg.Host = "http://skiffd"
	cfg.Dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.socket)
	}
	return kubernetes.NewForConfigOrDie(cfg), "the same skiffd's unix socket (plain HTTP)", true
}

// percentile is the p-th percentile of d (nearest rank).
func percentile(d []time.Duration, p int) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[min(len(d)-1, len(d)*p/100)]
}

// loadAverage is the machine's /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return string(b[:len(b)-1])
}
