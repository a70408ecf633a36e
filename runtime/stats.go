package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"

	cgroup1stats "github.com/containerd/cgroups/v3/cgroup1/stats"
	cgroup2stats "github.com/containerd/cgroups/v3/cgroup2/stats"
	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	"google.golang.org/protobuf/proto"
)

// TaskState is what a container's task is doing, in the kubelet's words
// for its running_containers metric.
type TaskState string

// The states of a container's task.
const (
	TaskCreated TaskState = "created" // no task yet, or one made and never started
	TaskRunning TaskState = "running"
	TaskExited  TaskState = "exited"
	TaskUnknown TaskState = "unknown"
)

// ContainerStats is one container's state and, while it runs, its cgroup's
// figures as the kubelet reads them.
type ContainerStats struct {
	ID     string
	Labels map[string]string
	State  TaskState
	// Usage is set for a running task whose cgroup could be read.
	Usage *Usage
}

// Usage is a cgroup's cumulative CPU time and its memory working set at
// Timestamp.
type Usage struct {
	Timestamp time.Time
	// CPU is the CPU time the cgroup used since it was made.
	CPU time.Duration
	// MemoryWorkingSet is the memory in use less the inactive file cache
	// (the part the kernel can drop at once), as the kubelet counts it.
	MemoryWorkingSet uint64
}

// Stats reads every managed container's state and the cgroup figures of
// the running ones, in three calls to containerd whatever their number.
func (r *Runtime) Stats(ctx context.Context) ([]ContainerStats, error) {
	ctx = r.withNS(ctx)
	found, err := r.client.ContainerService().List(ctx, fmt.Sprintf("labels.%q==true", LabelManaged))
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	tasks, err := r.client.TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		return nil, fmt.Errorf("listing tasks: %w", err)
	}
	states := make(map[string]TaskState, len(tasks.Tasks))
	for _, t := range tasks.Tasks {
		states[t.ID] = taskState(t.Status)
	}
	// NOTE: only the running tasks' metrics are asked for: containerd
	// logs an error for each task whose cgroup is gone.
	var running []string
	for id, st := range states {
		if st == TaskRunning {
			running = append(running, fmt.Sprintf("id==%q", id))
		}
	}
	metrics := &tasksapi.MetricsResponse{}
	if len(running) > 0 {
		if metrics, err = r.client.TaskService().Metrics(ctx, &tasksapi.MetricsRequest{Filters: running}); err != nil {
			return nil, fmt.Errorf("reading task metrics: %w", err)
		}
	}
	usage := make(map[string]*Usage, len(metrics.Metrics))
	for _, m := range metrics.Metrics {
		if m.Data == nil {
			continue
		}
		u, err := decodeUsage(m.Data.GetTypeUrl(), m.Data.GetValue())
		if err != nil {
			logger(m.ID).WithError(err).Debug("reading task metrics")
			continue
		}
		u.Timestamp = time.Now()
		if ts := m.GetTimestamp(); ts != nil && !ts.AsTime().IsZero() {
			u.Timestamp = ts.AsTime()
		}
		usage[m.ID] = u
	}
	out := make([]ContainerStats, 0, len(found))
	for _, c := range found {
		st, ok := states[c.ID]
		if !ok {
			st = TaskCreated
			if c.Labels[labelStartedAt] != "" {
				st = TaskExited
			}
		}
		cs := ContainerStats{ID: c.ID, Labels: c.Labels, State: st}
		if st == TaskRunning {
			cs.Usage = usage[c.ID]
		}
		out = append(out, cs)
	}
	return out, nil
}

func taskState(s tasktypes.Status) TaskState {
	switch s {
	case tasktypes.Status_CREATED:
		return TaskCreated
	case tasktypes.Status_RUNNING, tasktypes.Status_PAUSED, tasktypes.Status_PAUSING:
		return TaskRunning
	case tasktypes.Status_STOPPED:
		return TaskExited
	}
	return TaskUnknown
}

// decodeUsage reads the CPU time and working set out of a task's metrics,
// cgroup v1 or v2 (containerd's cgroups types, told apart by type URL).
func decodeUsage(typeURL string, data []byte) (*Usage, error) {
	switch {
	case strings.HasSuffix(typeURL, "io.containerd.cgroups.v1.Metrics"):
		var m cgroup1stats.Metrics
		if err := proto.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("decoding cgroup v1 metrics: %w", err)
		}
		return usageV1(&m), nil
	case strings.HasSuffix(typeURL, "io.containerd.cgroups.v2.Metrics"):
		var m cgroup2stats.Metrics
		if err := proto.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("decoding cgroup v2 metrics: %w", err)
		}
		return usageV2(&m), nil
	}
	return nil, fmt.Errorf("metrics of type %q", typeURL)
}

// usageV1 is cgroup v1's cpuacct.usage and memory.usage_in_bytes less
// total_inactive_file (cadvisor's working set, which the kubelet reports).
func usageV1(m *cgroup1stats.Metrics) *Usage {
	var u Usage
	if m.GetCPU().GetUsage() != nil {
		u.CPU = time.Duration(m.GetCPU().GetUsage().GetTotal())
	}
	if mem := m.GetMemory(); mem != nil {
		u.MemoryWorkingSet = workingSet(mem.GetUsage().GetUsage(), mem.GetTotalInactiveFile())
	}
	return &u
}

// usageV2 is cgroup v2's cpu.stat usage_usec and memory.current less
// memory.stat's inactive_file.
func usageV2(m *cgroup2stats.Metrics) *Usage {
	var u Usage
	if cpu := m.GetCPU(); cpu != nil {
		u.CPU = time.Duration(cpu.GetUsageUsec()) * time.Microsecond
	}
	if mem := m.GetMemory(); mem != nil {
		u.MemoryWorkingSet = workingSet(mem.GetUsage(), mem.GetInactiveFile())
	}
	return &u
}

// workingSet is usage less the inactive file cache, never below zero.
func workingSet(usage, inactiveFile uint64) uint64 {
	if inactiveFile >= usage {
		return 0
	}
	return usage - inactiveFile
}
