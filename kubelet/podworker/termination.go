package podworker

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/logs"
	"github.com/skiff-sh/skiff/runtime"
)

// The kubelet's limits on a termination message: what the container wrote
// at terminationMessagePath (its last 4096 bytes), or with
// FallbackToLogsOnError the end of its log (80 lines, 2048 bytes).
const (
	maxTerminationMessage = 4096
	fallbackLogLines      = 80
	fallbackLogBytes      = 2048
)

// terminationLogPath is the host file behind one instance's
// terminationMessagePath.
func (w *worker) terminationLogPath(c *corev1.Container, attempt int) string {
	return filepath.Join(podDir(w.m.cfg.VolumeRoot, string(w.uid)), "containers", c.Name, strconv.Itoa(attempt))
}

// terminationLogMount creates the (empty, world-writable) file the
// container may write its termination message to, and mounts it at
// terminationMessagePath, as the kubelet does.
func (w *worker) terminationLogMount(pod *corev1.Pod, c *corev1.Container, attempt int) (runtime.Mount, bool, error) {
	if c.TerminationMessagePath == "" || w.m.cfg.VolumeRoot == "" {
		return runtime.Mount{}, false, nil
	}
	path := w.terminationLogPath(c, attempt)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return runtime.Mount{}, false, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o666)
	if err != nil {
		return runtime.Mount{}, false, err
	}
	f.Close()
	if err := os.Chmod(path, 0o666); err != nil {
		return runtime.Mount{}, false, err
	}
	return runtime.Mount{Source: path, Destination: c.TerminationMessagePath, Type: "bind"}, true, nil
}

// terminationMessage is the message of an instance that exited with code:
// what it wrote to its termination log, else (FallbackToLogsOnError and a
// failure) the end of its log.
func (r *containerRun) terminationMessage(code int32) string {
	if r.spec.TerminationMessagePath != "" && r.w.m.cfg.VolumeRoot != "" {
		if msg := readTail(r.w.terminationLogPath(r.spec, r.attempt), maxTerminationMessage); msg != "" {
			return msg
		}
	}
	if !r.fallsBackToLog(code) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var buf bytes.Buffer
	lines, limit := int64(fallbackLogLines), int64(fallbackLogBytes)
	path := kube.ContainerLogPath(r.w.m.node.logRoot, r.pod, r.spec.Name, r.attempt)
	if err := logs.Write(ctx, &buf, path, r.attempt, logs.Options{TailLines: &lines, LimitBytes: &limit}, nil); err != nil {
		return ""
	}
	return buf.String()
}

// fallsBackToLog reports whether an instance that exited with code and left
// no termination log takes its message from its log.
func (r *containerRun) fallsBackToLog(code int32) bool {
	return r.spec.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && code != 0
}

// completeLogMessage takes the recorded exit's message from the log again
// once the log is complete (releaseInstance returned). The exit is recorded
// before the task's deletion ends the log driver, which may not have
// written the container's last lines by then.
//
// NOTE: CRI reports a container exited only once its output is copied, so
// the kubelet reads a whole log for this message.
func (r *containerRun) completeLogMessage(id string) {
	if r.recorded == nil || !r.fallsBackToLog(r.recorded.ExitCode) {
		return
	}
	msg := r.terminationMessage(r.recorded.ExitCode)
	if msg == r.recorded.Message {
		return
	}
	containerID := kube.ContainerID(id)
	err := r.w.updateContainer(r.spec.Name, r.kind != kindRegular, func(cs *corev1.ContainerStatus) {
		if t := cs.State.Terminated; t != nil && t.ContainerID == containerID {
			t.Message = msg
		}
	})
	if err != nil && !errors.Is(err, errPodGone) {
		r.w.logError("recording the termination message", err)
		return
	}
	recorded := *r.recorded // shared with the status written
	recorded.Message = msg
	r.recorded = &recorded
}

// readTail reads at most the last n bytes of the file at path ("" if none).
func readTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	if fi.Size() > n {
		if _, err := f.Seek(fi.Size()-n, io.SeekStart); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}
