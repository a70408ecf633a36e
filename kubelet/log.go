package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet/streaming"
	"github.com/skiff-sh/skiff/logs"
)

// Log picks the instance of the pod's container whose log a /log request
// reads (logAttempt) and returns what writes it: that instance's file and,
// with req.Follow, the instances after it as they start (nextAttempt),
// until the container ends for good or ctx ends.
func (s *Streams) Log(pod *corev1.Pod, container string, req streaming.LogRequest) (func(ctx context.Context, w io.Writer) error, error) {
	exists := func(attempt int) bool {
		_, err := os.Stat(kube.ContainerLogPath(s.logRoot, pod, container, attempt))
		return err == nil
	}
	attempt, err := logAttempt(pod, container, req.Previous, exists)
	if err != nil {
		return nil, err
	}
	var follow *logs.Follow
	if req.Follow && !req.Previous {
		follow = &logs.Follow{Next: func(ctx context.Context, attempt int) (string, bool) {
			return s.nextAttempt(ctx, pod, container, attempt, exists)
		}}
	}
	opts := req.Options
	opts.Skipped = func(file string, err error) {
		logrus.WithFields(logrus.Fields{"pod": pod.Namespace + "/" + pod.Name, "path": file}).WithError(err).Error("skipping log line")
	}
	path := kube.ContainerLogPath(s.logRoot, pod, container, attempt)
	return func(ctx context.Context, w io.Writer) error {
		return logs.Write(ctx, w, path, attempt, opts, follow)
	}, nil
}

// logAttempt is the attempt whose file to read: the container's
// restartCount, or the one before with previous. Between two attempts
// (waiting to restart, e.g. CrashLoopBackOff) it is the last attempt that
// has a file, as the kubelet shows the last instance's log.
func logAttempt(pod *corev1.Pod, container string, previous bool, exists func(attempt int) bool) (int, error) {
	cs := kube.PodContainerStatus(&pod.Status, container)
	if previous {
		if cs == nil || cs.RestartCount == 0 {
			return 0, apierrors.NewBadRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod.Name))
		}
		return int(cs.RestartCount) - 1, nil
	}
	if cs == nil || (cs.State.Waiting != nil && cs.RestartCount == 0 && cs.LastTerminationState.Terminated == nil) {
		reason := "ContainerCreating"
		if cs != nil && cs.State.Waiting.Reason != "" {
			reason = cs.State.Waiting.Reason
		}
		return 0, apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, pod.Name, reason))
	}
	attempt := int(cs.RestartCount)
	if cs.State.Waiting != nil && attempt > 0 && !exists(attempt) {
		attempt--
	}
	return attempt, nil
}

// nextAttempt waits until the container's attempt after attempt has
// started and has a log file (→ its path) or the container ended for good
// (→ ok=false): the pod is gone or finished, or the container terminated and
// will not restart.
func (s *Streams) nextAttempt(ctx context.Context, pod *corev1.Pod, container string, attempt int,
	exists func(attempt int) bool) (string, bool) {
	watcher, err := s.store.Watch(ctx, db.Pods, 0)
	if err != nil {
		return "", false
	}
	defer watcher.Stop()
	obj, err := s.store.Get(db.Pods, pod.Namespace, pod.Name)
	for {
		if err != nil {
			return "", false
		}
		cur := obj.(*corev1.Pod)
		if cur.UID != pod.UID {
			return "", false
		}
		if next, ok, done := attemptDecision(cur, container, attempt, exists); done {
			return kube.ContainerLogPath(s.logRoot, cur, container, next), ok
		}
		obj, err = nextPodEvent(ctx, watcher, pod.Namespace, pod.Name, pod.UID)
	}
}

// nextPodEvent waits for the next change of one pod.
func nextPodEvent(ctx context.Context, watcher *db.Watcher, ns, name string, uid types.UID) (db.Object, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case ev, ok := <-watcher.Events():
			if !ok {
				return nil, errors.New("watch ended")
			}
			if ev.Object.GetNamespace() != ns || ev.Object.GetName() != name || ev.Object.GetUID() != uid {
				continue
			}
			if ev.Type == "DELETED" {
				return nil, db.ErrNotFound
			}
			return ev.Object, nil
		}
	}
}

// attemptDecision decides, from the pod's current state, whether a
// follower of attempt moves on: done with ok (the next attempt has started
// and has a file), done without (the container ended for good), or not done
// (wait for the next change of the pod).
func attemptDecision(pod *corev1.Pod, container string, attempt int, exists func(int) bool) (next int, ok, done bool) {
	cs := kube.PodContainerStatus(&pod.Status, container)
	if cs != nil && int(cs.RestartCount) > attempt && exists(attempt+1) {
		return attempt + 1, true, true
	}
	if kube.IsPodTerminal(pod) {
		return 0, false, true
	}
	if cs == nil || cs.State.Terminated == nil {
		return 0, false, false
	}
	if pod.DeletionTimestamp != nil || !kube.ContainerRestarts(&pod.Spec, container, cs.State.Terminated.ExitCode) {
		return 0, false, true
	}
	return 0, false, false
}
