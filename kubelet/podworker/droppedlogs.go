package podworker

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/logs"
	"github.com/skiff-sh/skiff/runtime"
)

// reasonLogLinesDropped is the reason of the Warning recorded on a pod
// when a container's log driver could not write some of its lines (the
// disk was full).
//
// NOTE: the kubelet has no such event (CRI's log writer drops lines
// silently). The name follows the kubelet's reasons that say what happened
// (ExceededGracePeriod, Evicted) and names what is counted, so that an
// alert can key on it; the message carries the count and the cause.
const reasonLogLinesDropped = "LogLinesDropped"

// driverDrainTimeout bounds the wait for a removed instance's log driver to
// end (the shim kills it 12 s after it closed its pipes).
const driverDrainTimeout = 15 * time.Second

// prepareLog creates the instance's log file and its dropped-lines record
// before the container is created: on a full disk the creation fails (and
// is retried) instead of the start.
//
// NOTE: the kubelet fails to generate a container's config
// (CreateContainerConfigError) when it cannot create its log directory.
func (r *containerRun) prepareLog(cfg runtime.ContainerConfig) error {
	if cfg.LogPath == "" {
		return nil
	}
	if err := logs.Prepare(cfg.LogPath); err != nil {
		return &configError{fmt.Sprintf("create container log directory for container %s failed: %v", r.spec.Name, err)}
	}
	return nil
}

// reportDroppedLogs records a Warning on the pod if the log driver of
// instance id could not write some of its lines. It runs while the
// instance is removed and waits for the driver to end: the shim keeps the
// container's pipes open until its task is deleted, which ends the driver
// (after it wrote what was left), so the count is final. An instance whose exit was recorded but which a restart
// of skiffd found still in containerd is reported then.
//
// NOTE: a restart between the removal and the report loses the report (the
// count stays in the record until the pod's logs go).
func (r *containerRun) reportDroppedLogs(id string) {
	if id == "" {
		return // not found in containerd: reported, if at all, by an earlier run
	}
	path := kube.ContainerLogPath(r.w.m.node.logRoot, r.pod, r.spec.Name, r.attempt)
	ctx, cancel := context.WithTimeout(context.Background(), driverDrainTimeout)
	defer cancel()
	d, err := logs.ReadDropped(ctx, path)
	if err != nil {
		r.log.WithError(err).Warn("reading the count of dropped log lines")
	}
	if d.Lines == 0 {
		return
	}
	r.log.WithField("lines", d.Lines).Warn("log lines dropped")
	r.event(corev1.EventTypeWarning, reasonLogLinesDropped,
		"Container %s lost %d log lines: its log file could not be written (%s)", r.spec.Name, d.Lines, d.Cause)
}
