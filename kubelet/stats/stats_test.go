package stats

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/procfs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/runtime"
)

// fakeSource answers Stats with the next of its samples.
type fakeSource struct {
	samples [][]runtime.ContainerStats
	err     error
}

func (f *fakeSource) Stats(context.Context) ([]runtime.ContainerStats, error) {
	if f.err != nil {
		return nil, f.err
	}
	s := f.samples[0]
	f.samples = f.samples[1:]
	return s, nil
}

func running(id, pod, name string, at time.Time, cpu time.Duration, ws uint64) runtime.ContainerStats {
	return runtime.ContainerStats{ID: id, State: runtime.TaskRunning,
		Labels: map[string]string{runtime.LabelPodUID: pod, runtime.LabelContainerName: name},
		Usage:  &runtime.Usage{Timestamp: at, CPU: cpu, MemoryWorkingSet: ws}}
}

func TestSamplerRates(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)
	t1 := t0.Add(10 * time.Second)
	exited := runtime.ContainerStats{ID: "x", State: runtime.TaskExited, Labels: map[string]string{runtime.LabelPodUID: "p3"}}
	src := &fakeSource{samples: [][]runtime.ContainerStats{
		{running("a", "p1", "app", t0, time.Second, 10<<20), running("b", "p1", "side", t0, 0, 1<<20), exited},
		// a used 5 s of CPU in 10 s: half a core; b a quarter; c is new.
		{running("a", "p1", "app", t1, 6*time.Second, 12<<20), running("b", "p1", "side", t1, 2500*time.Millisecond, 2<<20),
			running("c", "p2", "app", t1, time.Second, 3<<20), exited},
	}}
	nodeAt := []runtime.Usage{{Timestamp: t0, CPU: 100 * time.Second, MemoryWorkingSet: 1 << 30}, {Timestamp: t1, CPU: 115 * time.Second, MemoryWorkingSet: 2 << 30}}
	reg := prometheus.NewRegistry()
	s := New(Config{Source: src, Metrics: reg, Node: func() (runtime.Usage, error) {
		u := nodeAt[0]
		nodeAt = nodeAt[1:]
		return u, nil
	}})
	ctx := context.Background()
	if err := s.sample(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := s.PodMetrics("p1"); ok {
		t.Error("p1 has metrics after one sample")
	}
	if _, _, _, ok := s.NodeMetrics(); ok {
		t.Error("the node has metrics after one sample")
	}
	if err := s.sample(ctx); err != nil {
		t.Fatal(err)
	}
	ts, window, containers, ok := s.PodMetrics("p1")
	if !ok || !ts.Equal(t1) || window != 10*time.Second {
		t.Fatalf("p1: %v %v %v %v", ts, window, containers, ok)
	}
	got := map[string][2]string{}
	for _, c := range containers {
		cpu, mem := c.Usage[corev1.ResourceCPU], c.Usage[corev1.ResourceMemory]
		got[c.Name] = [2]string{cpu.String(), mem.String()}
	}
	if diff := cmp.Diff(map[string][2]string{"app": {"500m", "12Mi"}, "side": {"250m", "2Mi"}}, got); diff != "" {
		t.Errorf("p1's containers (-want,+got):\n%s", diff)
	}
	if _, _, _, ok := s.PodMetrics("p2"); ok {
		t.Error("p2 has metrics after one sample of its container")
	}
	_, window, usage, ok := s.NodeMetrics()
	if cpu := usage[corev1.ResourceCPU]; !ok || window != 10*time.Second || cpu.Cmp(resource.MustParse("1500m")) != 0 {
		t.Errorf("node: %v %v %v", usage, window, ok)
	}
	if got := testutil.ToFloat64(s.runningPods); got != 2 {
		t.Errorf("kubelet_running_pods = %v, want 2", got)
	}
	if r, e := testutil.ToFloat64(s.runningContainers.WithLabelValues("running")), testutil.ToFloat64(s.runningContainers.WithLabelValues("exited")); r != 3 || e != 1 {
		t.Errorf("kubelet_running_containers running %v exited %v, want 3 and 1", r, e)
	}

	// A failed sample keeps what was measured; a container gone is dropped.
	src.err = errors.New("containerd restarting")
	nodeAt = []runtime.Usage{{Timestamp: t1.Add(10 * time.Second), CPU: 130 * time.Second}}
	if err := s.sample(ctx); err == nil {
		t.Error("a failed sample reported no error")
	}
	if _, _, _, ok := s.PodMetrics("p1"); !ok {
		t.Error("p1's metrics lost with a failed sample")
	}
	src.err, src.samples = nil, [][]runtime.ContainerStats{{}}
	nodeAt = []runtime.Usage{{Timestamp: t1.Add(20 * time.Second), CPU: 140 * time.Second}}
	if err := s.sample(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := s.PodMetrics("p1"); ok {
		t.Error("p1 has metrics once its containers are gone")
	}
}

func TestNodeUsage(t *testing.T) {
	at := time.Now()
	cpu := procfs.CPUStat{User: 10, Nice: 1, System: 4, Idle: 1000, Iowait: 50, IRQ: 0.5, SoftIRQ: 0.25, Steal: 0.25}
	mem := procfs.Meminfo{MemTotalBytes: ptr.To[uint64](8 << 30), MemFreeBytes: ptr.To[uint64](5 << 30), InactiveFileBytes: ptr.To[uint64](1 << 30)}
	u, err := nodeUsage(at, cpu, mem)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(runtime.Usage{Timestamp: at, CPU: 16 * time.Second, MemoryWorkingSet: 2 << 30}, u); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	if _, err := nodeUsage(at, cpu, procfs.Meminfo{}); err == nil {
		t.Error("no error without meminfo's figures")
	}
}
