//go:build integration

package network_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/network"
)

// benchSandboxes is how many sandboxes each measurement sets up and tears
// down: enough for stable medians, few enough for a /24.
const benchSandboxes = 48

// BenchmarkSetupTeardown measures the time inside Setup and Teardown (the
// CNI plugin chain, the namespace, the files) for pods without hostPorts
// and with one, parallelism pods at a time, as the pod worker calls them.
// It reports the mean per pod of each.
func BenchmarkSetupTeardown(b *testing.B) {
	for _, hostPort := range []bool{false, true} {
		for _, parallelism := range []int{1, 8} {
			b.Run(fmt.Sprintf("hostPort-%t/parallelism-%d", hostPort, parallelism), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					setup, teardown := setupTeardown(b, parallelism, hostPort)
					b.ReportMetric(ms(setup), "setup-ms/pod")
					b.ReportMetric(ms(teardown), "teardown-ms/pod")
				}
			})
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// setupTeardown sets up and tears down benchSandboxes sandboxes,
// parallelism at a time, and returns the mean time of each call.
func setupTeardown(b *testing.B, parallelism int, hostPort bool) (setup, teardown time.Duration) {
	n, _ := newNetwork(b, b.TempDir())
	ctx := context.Background()
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallelism)
	errs := make(chan error, benchSandboxes)
	for i := 0; i < benchSandboxes; i++ {
		pod := network.Pod{UID: unique("uid-"), Namespace: "default", Name: fmt.Sprintf("p%d", i), Hostname: fmt.Sprintf("p%d", i)}
		if hostPort {
			pod.Ports = []network.PortMapping{{HostPort: int32(30000 + i), ContainerPort: 80, Protocol: "tcp"}}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			if _, err := n.Setup(ctx, pod); err != nil {
				errs <- err
				return
			}
			set := time.Since(start)
			start = time.Now()
			if err := n.Teardown(ctx, pod.UID); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			setup += set
			teardown += time.Since(start)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return setup / benchSandboxes, teardown / benchSandboxes
}
