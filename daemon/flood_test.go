//go:build integration

package daemon_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFloodJob: a Job with parallelism 1,000,000 whose pods never fit the
// node keeps one sync's worth (500) of pods waiting for admission and no
// more, the API answers while it runs, and the memory it took is returned
// once the Job is deleted.
//
// NOTE: before admission paced the Job controller, this Job made about
// 1000 pods a second (14000 in 12 s), skiffd's resident memory (VmRSS) grew from
// 46 MiB to 518 MiB and was 711 MiB after the Job was deleted: the memory
// bounds below fail without it, with room for a loaded machine.
func TestFloodJob(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pid := s.cmd.Process.Pid
	base := rssOf(t, pid)

	job := shJob("flood", "true", 1, 1_000_000, 0, corev1.RestartPolicyNever)
	job.Spec.Completions = nil
	// Pods that can never fit: they wait for admission, as pods beyond the
	// node's capacity do, without running anything on this machine.
	job.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000")}
	if _, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobs := s.client.BatchV1().Jobs("default")
	waitFor(t, 2*time.Minute, "500 pods waiting", func() (bool, error) {
		j, err := jobs.Get(ctx, "flood", metav1.GetOptions{})
		return err == nil && j.Status.Active >= 500, err
	})
	peak := base
	for range 5 {
		time.Sleep(time.Second)
		start := time.Now()
		j, err := jobs.Get(ctx, "flood", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading the Job during the flood: %v", err)
		}
		took := time.Since(start)
		n := podCount(t, s)
		rss := rssOf(t, pid)
		peak = max(peak, rss)
		t.Logf("%d pods, %d active; a GET answered in %s; memory %d MiB (at start %d MiB)", n, j.Status.Active, took.Round(time.Millisecond), rss>>20, base>>20)
		if n > 500 || j.Status.Active > 500 {
			t.Fatalf("%d pods (%d active) waiting for the node: want at most one sync's worth, 500", n, j.Status.Active)
		}
	}
	if peak > base+200<<20 {
		t.Errorf("memory grew from %d MiB to %d MiB for 500 waiting pods", base>>20, peak>>20)
	}
	bg := metav1.DeletePropagationBackground
	if err := jobs.Delete(ctx, "flood", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the flood's pods gone", func() (bool, error) { return podCount(t, s) == 0, nil })
	var after int64
	waitFor(t, 2*time.Minute, "memory returned", func() (bool, error) {
		after = rssOf(t, pid)
		return after <= base+64<<20, nil
	})
	t.Logf("memory after the Job was deleted: %d MiB (at start %d MiB, peak %d MiB)", after>>20, base>>20, peak>>20)
}

// podCount counts the pods of every namespace.
func podCount(t *testing.T, s *skiffd) int64 {
	t.Helper()
	pods, err := s.client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	n := int64(len(pods.Items))
	if pods.RemainingItemCount != nil {
		n += *pods.RemainingItemCount
	}
	return n
}

// rssOf is the anonymous resident memory of process pid (its heap,
// stacks and the Go runtime's; the store's mmap of the bbolt file is file
// cache and not counted), in bytes.
func rssOf(t testing.TB, pid int) int64 {
	t.Helper()
	return procStatus(t, pid, "RssAnon")
}
