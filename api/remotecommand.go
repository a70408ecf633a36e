package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/util/remotecommand"

	"github.com/skiff-sh/skiff/kubelet/streaming"
)

// Remote command sessions (exec and attach) speak the Kubernetes streaming
// protocols: over WebSocket, v5.channel.k8s.io (kubectl 1.30+, with the
// stream-close signal that ends stdin), v4.channel.k8s.io and the original
// channel.k8s.io; over SPDY/3.1, v4.channel.k8s.io (kubectl falls back to it
// when the WebSocket upgrade fails; older clients only speak it). The
// framing is apimachinery's (wsstream, spdy); this file only opens the
// streams a request asks for and reports the outcome on the error stream.

const (
	// streamIdleTimeout ends a session with no traffic.
	// NOTE: the kubelet's default --streaming-connection-idle-timeout.
	streamIdleTimeout = 4 * time.Hour
	// streamCreationTimeout bounds the wait for a SPDY client's streams.
	streamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
	// v4Base64Protocol is v4 with base64 text frames, for browser clients.
	v4Base64Protocol = "v4." + wsstream.Base64ChannelWebSocketProtocol
)

// streamOptions are the streams a client asks for.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

// parseStreamOptions reads ?stdin=&stdout=&stderr=&tty=.
func parseStreamOptions(q url.Values) (streamOptions, error) {
	o := streamOptions{
		stdin:  queryBool(q, "stdin"),
		stdout: queryBool(q, "stdout"),
		stderr: queryBool(q, "stderr"),
		tty:    queryBool(q, "tty"),
	}
	// NOTE: as the kubelet: a terminal has one output, stderr goes with stdout.
	if o.tty {
		o.stderr = false
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, apierrors.NewBadRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// queryBool reads a boolean query parameter.
// NOTE: as kube-apiserver converts one: absent, "0" and "false" are false,
// any other value is true.
func queryBool(q url.Values, key string) bool {
	v, ok := q[key]
	if !ok || len(v) == 0 {
		return false
	}
	return v[0] != "0" && !strings.EqualFold(v[0], "false")
}

// session is one upgraded exec or attach connection.
type session struct {
	// ctx ends when the request's does (server shutdown) or, for SPDY,
	// when the client closes the connection.
	ctx    context.Context
	cancel context.CancelFunc
	io     streaming.IO
	// status reports the outcome on the error stream.
	status func(*metav1.Status) error
	conn   io.Closer
}

// openSession upgrades the request to a WebSocket or SPDY connection with
// the streams opts asks for. When it fails, the response has been written
// (or the connection is gone) and ok is false.
func openSession(w http.ResponseWriter, r *http.Request, opts streamOptions) (s *session, ok bool) {
	if wsstream.IsWebSocketRequest(r) {
		s, ok = openWebSocket(w, r, opts)
	} else {
		s, ok = openSPDY(w, r, opts)
	}
	return s, ok
}

// finish reports st to the client and closes the connection.
func (s *session) finish(st *metav1.Status) {
	defer s.cancel()
	if err := s.status(st); err != nil {
		logrus.WithError(err).Debug("writing the outcome of a remote command")
	}
	if err := s.conn.Close(); err != nil {
		logrus.WithError(err).Debug("closing a remote command connection")
	}
}

// openWebSocket opens a channel.k8s.io WebSocket: channel 0 stdin, 1 stdout,
// 2 stderr, 3 the error (outcome) channel, 4 resize; v5 adds the close
// signal (handled by wsstream) that half-closes stdin.
func openWebSocket(w http.ResponseWriter, r *http.Request, opts streamOptions) (*session, bool) {
	channels := []wsstream.ChannelType{
		remotecommand.StreamStdIn:  channelIf(opts.stdin, wsstream.ReadChannel),
		remotecommand.StreamStdOut: channelIf(opts.stdout, wsstream.WriteChannel),
		remotecommand.StreamStdErr: channelIf(opts.stderr, wsstream.WriteChannel),
		remotecommand.StreamErr:    wsstream.WriteChannel,
		remotecommand.StreamResize: wsstream.ReadChannel,
	}
	protocols := wsstream.NewDefaultChannelProtocols(channels)
	protocols[remotecommand.StreamProtocolV5Name] = wsstream.ChannelProtocolConfig{Binary: true, Channels: channels}
	protocols[remotecommand.StreamProtocolV4Name] = wsstream.ChannelProtocolConfig{Binary: true, Channels: channels}
	protocols[v4Base64Protocol] = wsstream.ChannelProtocolConfig{Binary: false, Channels: channels}
	conn := wsstream.NewConn(protocols)
	conn.SetIdleTimeout(streamIdleTimeout)
	protocol, streams, err := conn.Open(hijacker{w}, r)
	if err != nil {
		// The WebSocket server has answered the handshake (403 for an
		// unknown protocol, so that clients fall back to SPDY).
		logrus.WithError(err).Debug("upgrading a remote command to WebSocket")
		return nil, false
	}
	// NOTE: as the kubelet, an empty frame on the first output channel
	// tells the client that the session is ready.
	first := streams[remotecommand.StreamErr]
	switch {
	case opts.stdout:
		first = streams[remotecommand.StreamStdOut]
	case opts.stderr:
		first = streams[remotecommand.StreamStdErr]
	}
	if _, err := first.Write(nil); err != nil {
		conn.Close()
		return nil, false
	}
	s := &session{
		conn:   conn,
		status: statusWriter(!isVersioned(protocol), streams[remotecommand.StreamErr]),
	}
	s.ctx, s.cancel = context.WithCancel(r.Context())
	s.io = streamIO(s.ctx, opts, streams[remotecommand.StreamStdIn], streams[remotecommand.StreamStdOut],
		streams[remotecommand.StreamStdErr], streams[remotecommand.StreamResize])
	return s, true
}

// isVersioned: the WebSocket protocol is v4 or later (JSON outcome).
func isVersioned(protocol string) bool {
	switch protocol {
	case remotecommand.StreamProtocolV5Name, remotecommand.StreamProtocolV4Name, v4Base64Protocol:
		return true
	}
	return false
}

func channelIf(requested bool, t wsstream.ChannelType) wsstream.ChannelType {
	if requested {
		return t
	}
	return wsstream.IgnoreChannel
}

// spdyStream is a stream the SPDY client created, with the signal that its
// reply went out.
type spdyStream struct {
	httpstream.Stream
	replySent <-chan struct{}
}

// openSPDY upgrades to SPDY/3.1 with v4.channel.k8s.io and waits for the
// client to create the streams opts asks for (told apart by their
// streamType header), plus the error stream and, with a TTY, resize.
func openSPDY(w http.ResponseWriter, r *http.Request, opts streamOptions) (*session, bool) {
	if len(r.Header.Values(httpstream.HeaderProtocolVersion)) == 0 {
		// NOTE: the unversioned protocol (v1) predates Kubernetes 1.4 and
		// is not served.
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("unable to upgrade: %s is required", httpstream.HeaderProtocolVersion)))
		return nil, false
	}
	if _, err := httpstream.Handshake(r, w, []string{remotecommand.StreamProtocolV4Name}); err != nil {
		return nil, false // Handshake answered 403 with the protocols it accepts
	}
	incoming := make(chan spdyStream)
	collected := make(chan struct{})
	conn := spdy.NewResponseUpgrader().UpgradeResponse(hijacker{w}, r,
		func(st httpstream.Stream, replySent <-chan struct{}) error {
			select {
			case incoming <- spdyStream{Stream: st, replySent: replySent}:
				return nil
			case <-collected:
				return errors.New("unexpected stream")
			}
		})
	if conn == nil {
		return nil, false // the upgrader answered
	}
	conn.SetIdleTimeout(streamIdleTimeout)
	streams, err := collectStreams(incoming, wantedStreams(opts), streamCreationTimeout)
	close(collected)
	if err != nil {
		logrus.WithError(err).Info("remote command over SPDY")
		conn.Close()
		return nil, false
	}
	s := &session{conn: conn, status: statusWriter(false, streams[corev1.StreamTypeError])}
	s.ctx, s.cancel = context.WithCancel(r.Context())
	go func() {
		select {
		case <-conn.CloseChan():
			s.cancel()
		case <-s.ctx.Done():
		}
	}()
	s.io = streamIO(s.ctx, opts, streams[corev1.StreamTypeStdin], streams[corev1.StreamTypeStdout],
		streams[corev1.StreamTypeStderr], streams[corev1.StreamTypeResize])
	return s, true
}

// wantedStreams are the SPDY stream types a session with opts has.
func wantedStreams(opts streamOptions) map[string]bool {
	want := map[string]bool{corev1.StreamTypeError: true}
	want[corev1.StreamTypeStdin] = opts.stdin
	want[corev1.StreamTypeStdout] = opts.stdout
	want[corev1.StreamTypeStderr] = opts.stderr
	want[corev1.StreamTypeResize] = opts.tty
	for t, ok := range want {
		if !ok {
			delete(want, t)
		}
	}
	return want
}

// collectStreams waits until the client has created one stream of each
// wanted type and each one's reply has gone out. Streams of other types
// are refused.
func collectStreams(incoming <-chan spdyStream, want map[string]bool, timeout time.Duration) (map[string]httpstream.Stream, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	got := map[string]spdyStream{}
	for len(got) < len(want) {
		select {
		case st := <-incoming:
			t := st.Headers().Get(corev1.StreamType)
			if !want[t] {
				st.Reset()
				continue
			}
			got[t] = st
		case <-timer.C:
			return nil, errors.New("timed out waiting for the client to create streams")
		}
	}
	streams := make(map[string]httpstream.Stream, len(got))
	for t, st := range got {
		select {
		case <-st.replySent:
		case <-timer.C:
			return nil, errors.New("timed out replying to the client's streams")
		}
		streams[t] = st.Stream
	}
	return streams, nil
}

// streamIO turns the opened streams into the session's streaming.IO; resizes
// are decoded only for a TTY.
func streamIO(ctx context.Context, opts streamOptions, stdin io.Reader, stdout, stderr io.Writer, resize io.Reader) streaming.IO {
	sio := streaming.IO{TTY: opts.tty}
	if opts.stdin {
		sio.Stdin = stdin
	}
	if opts.stdout {
		sio.Stdout = stdout
	}
	if opts.stderr {
		sio.Stderr = stderr
	}
	if opts.tty && resize != nil {
		sio.Resize = decodeResizes(ctx, resize)
	}
	return sio
}

// decodeResizes decodes the JSON terminal sizes the client sends, until
// the stream ends or ctx does.
func decodeResizes(ctx context.Context, r io.Reader) <-chan streaming.TerminalSize {
	sizes := make(chan streaming.TerminalSize)
	go func() {
		defer close(sizes)
		dec := json.NewDecoder(r)
		for {
			var size streaming.TerminalSize
			if err := dec.Decode(&size); err != nil {
				return
			}
			select {
			case sizes <- size:
			case <-ctx.Done():
				return
			}
		}
	}()
	return sizes
}

// statusWriter reports a session's outcome: v4 and later send the Status as
// JSON, success included (the exit code travels in it); the original
// protocol sends the message of a failure only.
func statusWriter(textOnly bool, w io.Writer) func(*metav1.Status) error {
	return func(st *metav1.Status) error {
		if textOnly {
			if st.Status == metav1.StatusSuccess {
				return nil
			}
			_, err := io.WriteString(w, st.Message)
			return err
		}
		b, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("encoding status: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
}

// hijacker lets the upgraders take the connection over through the
// middleware's response writers, which expose Unwrap for
// http.ResponseController.
type hijacker struct{ http.ResponseWriter }

// Hijack takes over the underlying connection.
func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}
