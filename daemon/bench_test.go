//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	containerdclient "github.com/containerd/containerd"
	"github.com/containerd/containerd/cio"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

const (
	benchPods        = 100
	benchParallelism = 4
)

// BenchmarkJob100 runs 100 single-container pods running `true` through a
// Job with parallelism 4, from creation to Complete, and the same 100
// containers started directly through containerd's Go client with the same
// parallelism (the floor), in the same run. It reports both and the ratio.
func BenchmarkJob100(b *testing.B) {
	for i := 0; i < b.N; i++ {
		floor := rawContainers(b, benchPods, benchParallelism)
		skiff := skiffJob(b, benchPods, benchParallelism)
		b.ReportMetric(floor.Seconds(), "containerd-s")
		b.ReportMetric(skiff.Seconds(), "skiffd-s")
		b.ReportMetric(skiff.Seconds()/floor.Seconds(), "ratio")
		fmt.Printf("%d pods, parallelism %d: containerd directly %s, skiffd Job %s, ratio %.2f\n",
			benchPods, benchParallelism, floor.Round(time.Millisecond), skiff.Round(time.Millisecond), skiff.Seconds()/floor.Seconds())
	}
}

func skiffJob(b *testing.B, completions, parallelism int32) time.Duration {
	s := newSkiffd(b)
	s.start()
	defer s.stop()
	job := shJob("bench", "true", completions, parallelism, 6, corev1.RestartPolicyNever)
	job.Spec.Template.Spec.Containers[0].Command = []string{"true"}
	start := time.Now()
	created, err := s.client.BatchV1().Jobs("default").Create(context.Background(), job, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	waitJob(b, s.client, "default", created.Name, batchv1.JobComplete, 10*time.Minute)
	return time.Since(start)
}

// rawContainers creates, starts, waits for and deletes n containers running
// `true` with the given parallelism, straight through containerd.
func rawContainers(b *testing.B, n, parallelism int) time.Duration {
	client, err := containerdclient.New(containerd.Address)
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	ctx := namespaces.WithNamespace(context.Background(), containerd.Namespace)
	image, err := client.GetImage(ctx, runtimetest.Image)
	if err != nil {
		b.Fatal(err)
	}
	run := func(id string) error {
		c, err := client.NewContainer(ctx, id,
			containerdclient.WithNewSnapshot(id, image),
			containerdclient.WithNewSpec(oci.WithImageConfig(image), oci.WithProcessArgs("true"),
				oci.WithHostNamespace(specs.NetworkNamespace)))
		if err != nil {
			return err
		}
		defer c.Delete(ctx, containerdclient.WithSnapshotCleanup)
		task, err := c.NewTask(ctx, cio.NullIO)
		if err != nil {
			return err
		}
		defer task.Delete(ctx)
		exit, err := task.Wait(ctx)
		if err != nil {
			return err
		}
		if err := task.Start(ctx); err != nil {
			return err
		}
		if st := <-exit; st.ExitCode() != 0 {
			return fmt.Errorf("exit code %d", st.ExitCode())
		}
		return nil
	}
	start := time.Now()
	sem := make(chan struct{}, parallelism)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := run(fmt.Sprintf("bench-raw-%d-%d", time.Now().UnixNano(), i)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return time.Since(start)
}
