// Package stats samples what the node and its pods' containers use — CPU
// time and working-set memory, from the containers' cgroups through
// containerd and the node's /proc — and turns two samples into the rates
// the resource metrics API serves (kubectl top), as the kubelet and
// metrics-server do. Each sample also sets the kubelet's gauges of
// running pods and containers.
package stats

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/skiff-sh/skiff/runtime"
)

// DefaultInterval is the time between two samples: the kubelet's cAdvisor
// housekeeping interval. The CPU rate is measured over it.
const DefaultInterval = 10 * time.Second

// Source reads the containers' states and cgroup figures (*runtime.Runtime).
type Source interface {
	Stats(ctx context.Context) ([]runtime.ContainerStats, error)
}

// Config configures a Sampler.
type Config struct {
	Source Source
	// Node reads the node's usage; nil = ReadNode (/proc).
	Node func() (runtime.Usage, error)
	// Interval is the time between samples; 0 = DefaultInterval.
	Interval time.Duration
	// Metrics is where the kubelet's running pods and containers gauges
	// are registered; nil = they are kept unregistered.
	Metrics prometheus.Registerer
}

// Sampler samples usage every Interval and answers the resource metrics
// API from its last two samples. Create it with New and start it with Run;
// its methods are safe for concurrent use.
type Sampler struct {
	cfg               Config
	runningPods       prometheus.Gauge
	runningContainers *prometheus.GaugeVec

	mu         sync.Mutex
	containers map[string]*pair // by container ID, running ones only
	node       pair
}

// pair is a container's (or the node's) last two samples.
type pair struct {
	podUID     types.UID
	container  string
	prev, last *runtime.Usage
}

// push makes u the last sample.
func (p *pair) push(u *runtime.Usage) {
	p.prev, p.last = p.last, u
}

// New returns a Sampler; zero Config fields take their defaults.
func New(cfg Config) *Sampler {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Node == nil {
		cfg.Node = ReadNode
	}
	s := &Sampler{
		cfg: cfg,
		runningPods: prometheus.NewGauge(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "running_pods",
			Help: "Number of pods that have a running pod sandbox"}),
		runningContainers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "kubelet", Name: "running_containers",
			Help: "Number of containers currently running"}, []string{"container_state"}),
		containers: map[string]*pair{},
	}
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(s.runningPods, s.runningContainers)
	}
	return s
}

// Run samples at once and then every Interval until ctx ends. A failed
// sample is logged and the next one tried: containerd may be restarting.
func (s *Sampler) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if err := s.sample(ctx); err != nil && ctx.Err() == nil {
			logrus.WithError(err).Debug("sampling resource usage")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sample takes one sample of the node and of every running container.
func (s *Sampler) sample(ctx context.Context) error {
	node, nodeErr := s.cfg.Node()
	list, err := s.cfg.Source.Stats(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if nodeErr == nil {
		s.node.push(&node)
	}
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(list))
	states := map[runtime.TaskState]int{}
	pods := map[string]bool{}
	for _, c := range list {
		states[c.State]++
		if c.State != runtime.TaskRunning {
			continue
		}
		pods[c.Labels[runtime.LabelPodUID]] = true
		if c.Usage == nil {
			continue
		}
		seen[c.ID] = true
		p := s.containers[c.ID]
		if p == nil {
			p = &pair{podUID: types.UID(c.Labels[runtime.LabelPodUID]), container: c.Labels[runtime.LabelContainerName]}
			s.containers[c.ID] = p
		}
		p.push(c.Usage)
	}
	for id := range s.containers {
		if !seen[id] {
			delete(s.containers, id)
		}
	}
	for _, st := range []runtime.TaskState{runtime.TaskCreated, runtime.TaskRunning, runtime.TaskExited, runtime.TaskUnknown} {
		s.runningContainers.WithLabelValues(string(st)).Set(float64(states[st]))
	}
	s.runningPods.Set(float64(len(pods)))
	return nodeErr
}

// PodMetrics returns the usage of the pod's running containers measured
// twice; ok is false when none is. The timestamp is the newest sample's,
// the window the longest between a container's two samples.
func (s *Sampler) PodMetrics(uid types.UID) (timestamp time.Time, window time.Duration, containers []metricsv1beta1.ContainerMetrics, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.containers {
		if p.podUID != uid {
			continue
		}
		usage, w, measured := rate(p)
		if !measured {
			continue
		}
		containers = append(containers, metricsv1beta1.ContainerMetrics{Name: p.container, Usage: usage})
		if p.last.Timestamp.After(timestamp) {
			timestamp = p.last.Timestamp
		}
		window = max(window, w)
	}
	sortContainers(containers)
	return timestamp, window, containers, len(containers) > 0
}

// NodeMetrics returns the node's usage over its last two samples.
func (s *Sampler) NodeMetrics() (timestamp time.Time, window time.Duration, usage corev1.ResourceList, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	usage, window, ok = rate(&s.node)
	if !ok {
		return time.Time{}, 0, nil, false
	}
	return s.node.last.Timestamp, window, usage, true
}

// rate is the CPU rate between a pair's two samples (in cores, at
// nanocore precision, as metrics-server reports it) and the working set of
// the last one; measured is false without two usable samples.
func rate(p *pair) (usage corev1.ResourceList, window time.Duration, measured bool) {
	if p.prev == nil || p.last == nil {
		return nil, 0, false
	}
	window = p.last.Timestamp.Sub(p.prev.Timestamp)
	if window <= 0 || p.last.CPU < p.prev.CPU {
		return nil, 0, false
	}
	nanoCores := int64(float64(p.last.CPU-p.prev.CPU) / window.Seconds())
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewScaledQuantity(nanoCores, resource.Nano),
		corev1.ResourceMemory: *resource.NewQuantity(int64(p.last.MemoryWorkingSet), resource.BinarySI),
	}, window, true
}

// sortContainers orders a pod's container metrics by name, so answers are
// stable.
func sortContainers(cs []metricsv1beta1.ContainerMetrics) {
	slices.SortFunc(cs, func(a, b metricsv1beta1.ContainerMetrics) int { return strings.Compare(a.Name, b.Name) })
}
