package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet/streaming"
	"github.com/skiff-sh/skiff/logs"
)

// logRequest is a parsed /log request.
type logRequest struct {
	container string
	streaming.LogRequest
}

// podLog serves GET /api/v1/namespaces/{ns}/pods/{name}/log: one
// container's log, of the instance the kubelet (Streams.Log) picks,
// followed across restarts with ?follow=true.
func (s *server) podLog(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Streams == nil {
		writeError(w, r, apierrors.NewServiceUnavailable("container logs are not available"))
		return
	}
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
	write, err := s.cfg.Streams.Log(pod, req.container, req.LogRequest)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if wsstream.IsWebSocketRequest(r) {
		streamLogWebSocket(w, r, write)
		return
	}
	lw := &logWriter{w: w}
	if err := write(r.Context(), lw); err != nil {
		if !lw.started {
			// NOTE: kube-apiserver answers every error of the kubelet's
			// log endpoint (which answers them with 400) as BadRequest.
			writeError(w, r, apierrors.NewBadRequest(err.Error()))
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
	for name, dst := range map[string]*bool{"follow": &req.Follow, "previous": &req.Previous, "timestamps": &req.Options.Timestamps} {
		*dst = boolParam(q[name])
	}
	for name, dst := range map[string]**int64{"tailLines": &req.Options.TailLines, "limitBytes": &req.Options.LimitBytes} {
		if v := q.Get(name); v != "" {
			n, err := intParam(v, name)
			if err != nil {
				return req, err
			}
			*dst = &n
		}
	}
	return req, parseLogSince(q.Get("sinceSeconds"), q.Get("sinceTime"), &req.Options)
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
