package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/logs"
)

// logRequest is a parsed /log request.
type logRequest struct {
	container string
	follow    bool
	previous  bool
	opts      logs.Options
}

// podLog serves GET /api/v1/namespaces/{ns}/pods/{name}/log: one
// container's log file of the current (or previous) attempt, followed
// across restarts with ?follow=true.
func (s *server) podLog(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	ns, name := v["namespace"], v["name"]
	obj, err := s.store.Get(db.Pods, ns, name)
	if err != nil {
		writeError(w, r, statusFor(err, podResource.groupResource(), name))
		return
	}
	pod := obj.(*corev1.Pod)
	req, err := parseLogRequest(r, pod)
	if err != nil {
		writeError(w, r, err)
		return
	}
	exists := func(attempt int) bool {
		_, err := os.Stat(kube.ContainerLogPath(s.cfg.LogRoot, pod, req.container, attempt))
		return err == nil
	}
	attempt, err := logAttempt(pod, req, exists)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var follow *logs.Follow
	if req.follow && !req.previous {
		follow = &logs.Follow{Next: func(ctx context.Context, attempt int) (string, bool) {
			return s.nextAttempt(ctx, pod, req.container, attempt, exists)
		}}
	}
	path := kube.ContainerLogPath(s.cfg.LogRoot, pod, req.container, attempt)
	req.opts.Skipped = func(file string, err error) {
		logrus.WithFields(logrus.Fields{"pod": ns + "/" + name, "path": file}).WithError(err).Error("skipping log line")
	}
	if wsstream.IsWebSocketRequest(r) {
		streamLogWebSocket(w, r, func(ctx context.Context, out io.Writer) error {
			return logs.Write(ctx, out, path, attempt, req.opts, follow)
		})
		return
	}
	lw := &logWriter{w: w}
	if err := logs.Write(r.Context(), lw, path, attempt, req.opts, follow); err != nil {
		if !lw.started {
			writeError(w, r, apierrors.NewInternalError(fmt.Errorf("reading log of container %q in pod %q: %w", req.container, name, err)))
			return
		}
		logrus.WithFields(logrus.Fields{"pod": ns + "/" + name, "container": req.container}).WithError(err).Info("log stream ended")
	}
	lw.start()
}

// streamLogWebSocket answers a /log request that asks for a WebSocket
// (Upgrade: websocket), as kube-apiserver streams any subresource: one
// message per chunk of output, raw for the "binary.k8s.io" protocol (or
// none), base64 for "base64.binary.k8s.io", then a close once write
// returns. A client closing the socket ends write through its ctx.
//
// NOTE: errors found before streaming (no such container, a container
// waiting to start) were answered as a Status before the upgrade, as
// kube-apiserver answers them before it opens the stream.
func streamLogWebSocket(w http.ResponseWriter, r *http.Request, write func(ctx context.Context, out io.Writer) error) {
	protocols := wsstream.NewDefaultReaderProtocols()
	if asked, ok := logWebSocketProtocol(r, protocols); !ok {
		// NOTE: wsstream's Reader would refuse the handshake with a bare 403
		// and then wait forever for a stream that never starts.
		writeError(w, r, apierrors.NewForbidden(podResource.groupResource(), mux.Vars(r)["name"],
			fmt.Errorf("requested protocol(s) are not supported: %q", asked)))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(write(ctx, pw))
	}()
	if err := wsstream.NewReader(pr, true, protocols).Copy(hijacker{w}, r); err != nil {
		logrus.WithField("path", r.URL.Path).WithError(err).Debug("log websocket ended")
	}
	cancel()
	pr.Close()
	<-done
}

// logWebSocketProtocol reports whether one of the subprotocols a WebSocket
// request asks for (none means "") is one of protocols, and what it asked.
func logWebSocketProtocol(r *http.Request, protocols map[string]wsstream.ReaderProtocolConfig) ([]string, bool) {
	var asked []string
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			asked = append(asked, strings.TrimSpace(p))
		}
	}
	if len(asked) == 0 {
		_, ok := protocols[""]
		return asked, ok
	}
	for _, p := range asked {
		if _, ok := protocols[p]; ok {
			return asked, true
		}
	}
	return asked, false
}

// logWriter writes text/plain log output, sending the header on the first
// write (so that an error before any output is still a Status); logs.Write
// flushes it whenever it has caught up with the file (for follow).
type logWriter struct {
	w       http.ResponseWriter
	started bool
}

func (lw *logWriter) start() {
	if lw.started {
		return
	}
	lw.started = true
	lw.w.Header().Set("Content-Type", "text/plain")
	lw.w.WriteHeader(http.StatusOK)
}

func (lw *logWriter) Write(p []byte) (int, error) {
	lw.start()
	return lw.w.Write(p)
}

// Flush sends what was written so far.
func (lw *logWriter) Flush() {
	lw.start()
	if f, ok := lw.w.(http.Flusher); ok {
		f.Flush()
	}
}

// parseLogRequest reads the /log query parameters.
func parseLogRequest(r *http.Request, pod *corev1.Pod) (logRequest, error) {
	q := r.URL.Query()
	var req logRequest
	var err error
	if req.container, err = logContainer(pod, q.Get("container")); err != nil {
		return req, err
	}
	for name, dst := range map[string]*bool{"follow": &req.follow, "previous": &req.previous, "timestamps": &req.opts.Timestamps} {
		*dst = boolParam(q[name])
	}
	for name, dst := range map[string]**int64{"tailLines": &req.opts.TailLines, "limitBytes": &req.opts.LimitBytes} {
		if v := q.Get(name); v != "" {
			n, err := intParam(v, name)
			if err != nil {
				return req, err
			}
			*dst = &n
		}
	}
	return req, parseLogSince(q.Get("sinceSeconds"), q.Get("sinceTime"), &req.opts)
}

// parseLogSince sets opts.Since from sinceSeconds or sinceTime.
func parseLogSince(seconds, sinceTime string, opts *logs.Options) error {
	if seconds != "" && sinceTime != "" {
		return apierrors.NewBadRequest("at most one of sinceTime or sinceSeconds may be specified")
	}
	if seconds != "" {
		n, err := strconv.ParseInt(seconds, 10, 64)
		if err != nil || n < 1 {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid sinceSeconds %q: must be greater than 0", seconds))
		}
		opts.Since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	if sinceTime != "" {
		t, err := time.Parse(time.RFC3339, sinceTime)
		if err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid sinceTime %q: %v", sinceTime, err))
		}
		opts.Since = t
	}
	return nil
}

// logContainer picks the container: the named one, or the only one.
func logContainer(pod *corev1.Pod, name string) (string, error) {
	var names, inits []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.InitContainers {
		inits = append(inits, c.Name)
	}
	if name == "" {
		if len(names) == 1 {
			return names[0], nil
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names)
		if len(inits) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: %v", inits)
		}
		return "", apierrors.NewBadRequest(msg)
	}
	// NOTE: ephemeral containers have logs too, though kube's message does
	// not list them.
	if c, _ := kube.FindContainer(&pod.Spec, name); c != nil {
		return name, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

// logAttempt is the attempt whose file to read: the container's
// restartCount, or the one before with ?previous. Between two attempts
// (waiting to restart, e.g. CrashLoopBackOff) it is the last attempt that
// has a file, as the kubelet shows the last instance's log.
func logAttempt(pod *corev1.Pod, req logRequest, exists func(attempt int) bool) (int, error) {
	cs := kube.PodContainerStatus(&pod.Status, req.container)
	if req.previous {
		if cs == nil || cs.RestartCount == 0 {
			return 0, apierrors.NewBadRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", req.container, pod.Name))
		}
		return int(cs.RestartCount) - 1, nil
	}
	if cs == nil || (cs.State.Waiting != nil && cs.RestartCount == 0 && cs.LastTerminationState.Terminated == nil) {
		reason := "ContainerCreating"
		if cs != nil && cs.State.Waiting.Reason != "" {
			reason = cs.State.Waiting.Reason
		}
		return 0, apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start: %s", req.container, pod.Name, reason))
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
func (s *server) nextAttempt(ctx context.Context, pod *corev1.Pod, container string, attempt int,
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
			return kube.ContainerLogPath(s.cfg.LogRoot, cur, container, next), ok
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
