package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

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
	attempt, err := logAttempt(pod, container, req.Previous)
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
	cs := kube.PodContainerStatus(&pod.Status, container)
	ended := req.Previous || cs.State.Running == nil
	return func(ctx context.Context, w io.Writer) error {
		if ended && follow == nil {
			waitLogComplete(ctx, path)
		}
		err := logs.Write(ctx, w, path, attempt, opts, follow)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("failed to open log file %q: %w", path, err)
		}
		return err
	}, nil
}

// logDrainWait bounds how long a read of an ended instance's log waits for
// its driver to write what the container left in its pipes.
const logDrainWait = 5 * time.Second

// waitLogComplete waits until the log of an instance that ended is
// complete: the pod's status says the container exited as soon as its exit
// is known, before its log driver has written the last of its output (the
// driver ends once the instance's task is deleted, which follows at once).
//
// NOTE: CRI reports a container exited only once its output is copied, so
// that a kubelet's log read after the exit is whole.
func waitLogComplete(ctx context.Context, path string) {
	ctx, cancel := context.WithTimeout(ctx, logDrainWait)
	defer cancel()
	if err := logs.WaitComplete(ctx, path); err != nil {
		logrus.WithField("path", path).WithError(err).Debug("reading a log its driver may still write")
	}
}

// logAttempt is the attempt whose file to read, chosen as the kubelet's
// validateContainerLogStatus chooses the container it reads: with
// previous, the instance of lastState (none: an error); else the running
// or terminated instance, or, while the container waits to restart, the
// last one; a container that never ran is an error saying why it waits.
// The kubelet's errors are answered with 400.
//
// NOTE: attempts are numbered by restartCount: the pod worker records an
// instance's start and exit with its attempt as restartCount, and a
// container waiting after an exit keeps that count with the exit in
// lastState. So lastState is attempt restartCount while waiting and
// restartCount-1 otherwise.
func logAttempt(pod *corev1.Pod, container string, previous bool) (int, error) {
	fail := func(format string) (int, error) {
		return 0, apierrors.NewBadRequest(fmt.Sprintf(format, container, pod.Name))
	}
	cs := kube.PodContainerStatus(&pod.Status, container)
	if cs == nil {
		// NOTE: the kubelet knows every container's status as soon as it
		// takes the pod; the pod worker has not written it yet.
		return fail("container %q in pod %q is waiting to start: " + reasonContainerCreating)
	}
	current := int(cs.RestartCount)
	lastState := cs.LastTerminationState.Terminated
	last := current - 1
	if cs.State.Waiting != nil {
		last = current
	}
	switch state := cs.State; {
	case previous:
		if lastState == nil || lastState.ContainerID == "" {
			return fail("previous terminated container %q in pod %q not found")
		}
		return last, nil
	case state.Running != nil:
		return current, nil
	case state.Terminated != nil:
		if state.Terminated.ContainerID != "" {
			return current, nil
		}
		if lastState != nil && lastState.ContainerID != "" {
			return last, nil
		}
		return fail("container %q in pod %q is terminated")
	case lastState != nil:
		if lastState.ContainerID == "" {
			return fail("container %q in pod %q is terminated")
		}
		return last, nil
	case state.Waiting != nil:
		switch state.Waiting.Reason {
		case reasonErrImagePull:
			return fail("container %q in pod %q is waiting to start: image can't be pulled")
		case reasonImagePullBackOff:
			return fail("container %q in pod %q is waiting to start: trying and failing to pull image")
		}
		return 0, apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, pod.Name, state.Waiting.Reason))
	}
	return fail("container %q in pod %q is waiting to start - no logs yet")
}

// The waiting reasons logAttempt tells apart, as the kubelet's images
// package names them.
const (
	reasonContainerCreating = "ContainerCreating"
	reasonErrImagePull      = "ErrImagePull"
	reasonImagePullBackOff  = "ImagePullBackOff"
)

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
