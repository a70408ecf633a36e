package api

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	gwebsocket "github.com/gorilla/websocket"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	pfconst "k8s.io/apimachinery/pkg/util/portforward"
	"k8s.io/client-go/tools/portforward"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kubelet/streaming"
)

// Port forwarding (pods/portforward) speaks what the kubelet serves and
// kube-apiserver passes through:
//   - SPDY/3.1 with portforward.k8s.io: each forwarded connection is a pair
//     of streams the client creates, data and error, with the same
//     requestID and port headers;
//   - WebSocket with v4.channel.k8s.io (binary) or v4.base64.channel.k8s.io:
//     two channels per ?ports= entry, data then error, each opened by the
//     server with the port in two little-endian bytes; one connection per
//     port for the life of the WebSocket;
//   - SPDY tunnelled through a WebSocket whose subprotocol is
//     SPDY/3.1+portforward.k8s.io, as kube-apiserver 1.31+ accepts it
//     (kubectl 1.31+ offers it first and falls back to SPDY when the
//     upgrade fails).
// The framing is apimachinery's (spdy, wsstream) and client-go's (the
// tunnel's connection); the kubelet (Streams.PortForward) dials the port.

// podPortForward serves GET and POST .../pods/{name}/portforward.
func (s *server) podPortForward(w http.ResponseWriter, r *http.Request) {
	pod, forward, err := s.portForwardRequest(r)
	var ports []int32
	tunnel := wsstream.IsWebSocketRequestWithTunnelingProtocol(r)
	if err == nil && wsstream.IsWebSocketRequest(r) && !tunnel {
		ports, err = portForwardPorts(r)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	f := portForwarder{forward: forward, sandbox: string(pod.UID), log: logrus.WithField("pod", pod.Namespace+"/"+pod.Name)}
	switch {
	case tunnel:
		f.serveTunnel(w, r)
	case wsstream.IsWebSocketRequest(r):
		f.serveWebSocket(w, r, ports)
	default:
		f.serveSPDY(w, r)
	}
}

// portForwardRequest checks a port-forward request before the upgrade: the
// pod, and that the kubelet runs it.
func (s *server) portForwardRequest(r *http.Request) (*corev1.Pod, streaming.Forward, error) {
	if s.cfg.Streams == nil {
		return nil, nil, apierrors.NewServiceUnavailable("port forwarding is not available")
	}
	v := mux.Vars(r)
	obj, err := s.store.Get(db.Pods, v["namespace"], v["name"])
	if err != nil {
		return nil, nil, statusFor(err, podResource.groupResource(), v["name"])
	}
	pod := obj.(*corev1.Pod)
	forward, err := s.cfg.Streams.PortForward(pod)
	if err != nil {
		return nil, nil, err
	}
	return pod, forward, nil
}

// portForwardPorts reads the ?ports= a WebSocket client forwards (repeated
// or comma-separated, as kube-apiserver converts PodPortForwardOptions).
// NOTE: kube-apiserver passes them to the kubelet as ?port=, whose checks
// and messages (NewV4Options, a plain 400) name that parameter.
func portForwardPorts(r *http.Request) ([]int32, error) {
	values := r.URL.Query()["ports"]
	if len(values) == 0 {
		return nil, badPorts(fmt.Sprintf("query parameter %q is required", corev1.PortHeader))
	}
	var ports []int32
	for _, v := range values {
		if v == "" {
			return nil, badPorts(fmt.Sprintf("query parameter %q cannot be empty", corev1.PortHeader))
		}
		for _, p := range strings.Split(v, ",") {
			port, err := parsePort(p)
			if err != nil {
				return nil, badPorts(err.Error())
			}
			ports = append(ports, port)
		}
	}
	return ports, nil
}

func badPorts(msg string) error {
	return &streaming.RefusalError{Code: http.StatusBadRequest, Message: msg}
}

// parsePort reads a port number of a header or the query, as the kubelet.
func parsePort(s string) (int32, error) {
	port, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("unable to parse %q as a port: %v", s, err)
	}
	if port < 1 {
		return 0, fmt.Errorf("port %q must be > 0", s)
	}
	return int32(port), nil
}

// portForwarder runs the forwarded connections of one request.
type portForwarder struct {
	forward streaming.Forward
	// sandbox names the pod in the error stream's messages.
	sandbox string
	log     *logrus.Entry
}

// run forwards one connection and reports its failure on errStream.
// NOTE: the kubelet's message; with a CRI runtime the pod is the sandbox
// and the uid is empty.
func (f portForwarder) run(ctx context.Context, port int32, data io.ReadWriteCloser, errStream io.Writer) error {
	err := f.forward(ctx, port, data)
	if err == nil {
		return nil
	}
	msg := fmt.Sprintf("error forwarding port %d to pod %s, uid %v: %v", port, f.sandbox, "", err)
	f.log.Debug(msg)
	if _, werr := io.WriteString(errStream, msg); werr != nil {
		f.log.WithError(werr).Debug("writing a port forward's error")
	}
	return err
}

// serveWebSocket forwards one connection per port over v4.channel.k8s.io
// until each has ended.
func (f portForwarder) serveWebSocket(w http.ResponseWriter, r *http.Request, ports []int32) {
	channels := make([]wsstream.ChannelType, 0, 2*len(ports))
	for range ports {
		channels = append(channels, wsstream.ReadWriteChannel, wsstream.WriteChannel)
	}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		"": {Binary: true, Channels: channels},
		"v4." + wsstream.ChannelWebSocketProtocol: {Binary: true, Channels: channels},
		v4Base64Protocol: {Binary: false, Channels: channels},
	})
	conn.SetIdleTimeout(streamIdleTimeout)
	_, streams, err := conn.Open(hijacker{w}, r)
	if err != nil {
		f.log.WithError(err).Debug("upgrading a port forward to WebSocket")
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	// Every channel opens with its port, so that the client knows which is
	// which, before any data flows.
	for i, port := range ports {
		portBytes := binary.LittleEndian.AppendUint16(nil, uint16(port))
		for _, st := range streams[2*i : 2*i+2] {
			if _, err := st.Write(portBytes); err != nil {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for i, port := range ports {
		data, errStream := streams[2*i], streams[2*i+1]
		wg.Go(func() {
			defer errStream.Close()
			_ = f.run(ctx, port, data, errStream)
		})
	}
	wg.Wait()
}

// serveSPDY upgrades to SPDY/3.1 with portforward.k8s.io and forwards the
// connections the client opens until it closes.
func (f portForwarder) serveSPDY(w http.ResponseWriter, r *http.Request) {
	if _, err := httpstream.Handshake(r, w, []string{pfconst.PortForwardV1Name}); err != nil {
		if len(r.Header.Values(httpstream.HeaderProtocolVersion)) == 0 {
			writeError(w, r, apierrors.NewBadRequest(err.Error()))
		}
		return // otherwise Handshake answered 403 with the protocols it accepts
	}
	pairs := newStreamPairs()
	conn := spdy.NewResponseUpgrader().UpgradeResponse(hijacker{w}, r, pairs.received)
	if conn == nil {
		return // the upgrader answered
	}
	f.serveStreams(r.Context(), conn, pairs)
}

// serveTunnel upgrades to a WebSocket carrying SPDY (the tunnel's
// subprotocol) and serves the SPDY connection inside it as serveSPDY does.
func (f portForwarder) serveTunnel(w http.ResponseWriter, r *http.Request) {
	upgrader := gwebsocket.Upgrader{
		Subprotocols: []string{pfconst.WebsocketsSPDYTunnelingPortForwardV1},
		// NOTE: as kube-apiserver's tunnel: clients are not browsers, and
		// authentication has been done.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	ws, err := upgrader.Upgrade(hijacker{w}, r, nil)
	if err != nil {
		f.log.WithError(err).Debug("upgrading a port forward to a WebSocket tunnel")
		return // the upgrader answered
	}
	pairs := newStreamPairs()
	conn, err := spdy.NewServerConnection(portforward.NewTunnelingConnection("server", ws), pairs.received)
	if err != nil {
		f.log.WithError(err).Debug("opening SPDY in a WebSocket tunnel")
		ws.Close()
		return
	}
	f.serveStreams(r.Context(), conn, pairs)
}

// serveStreams pairs the client's streams as they come and forwards each
// complete pair, until the connection closes or ctx ends; it returns once
// every forward has.
func (f portForwarder) serveStreams(ctx context.Context, conn httpstream.Connection, pairs *streamPairs) {
	conn.SetIdleTimeout(streamIdleTimeout)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		close(pairs.done)
		cancel()
		conn.Close()
		wg.Wait()
	}()
	for {
		select {
		case <-conn.CloseChan():
			return
		case <-ctx.Done():
			return
		case st := <-pairs.streams:
			p, complete, err := pairs.add(st, conn, streamCreationTimeout)
			if err != nil {
				f.log.WithError(err).Debug("port forward stream")
				continue
			}
			if !complete {
				continue
			}
			wg.Go(func() {
				defer p.errStream.Close()
				port, _ := parsePort(p.data.Headers().Get(corev1.PortHeader))
				if f.run(ctx, port, p.data, p.errStream) != nil {
					// NOTE: as the kubelet, a failed connection's streams
					// are reset once the message is out.
					_ = p.data.Reset()
					_ = p.errStream.Reset()
				}
			})
		}
	}
}

// streamPair is one forwarded connection's streams, gathered by requestID.
type streamPair struct {
	data, errStream httpstream.Stream
	complete        chan struct{}
}

// streamPairs gathers the streams a SPDY client creates into pairs.
type streamPairs struct {
	streams chan httpstream.Stream
	done    chan struct{}
	mu      sync.Mutex
	pending map[string]*streamPair
}

func newStreamPairs() *streamPairs {
	return &streamPairs{streams: make(chan httpstream.Stream), done: make(chan struct{}), pending: map[string]*streamPair{}}
}

// received takes a stream the client created (spdy's NewStreamHandler):
// one without a valid port or stream type is refused, as by the kubelet.
func (ps *streamPairs) received(st httpstream.Stream, _ <-chan struct{}) error {
	if p := st.Headers().Get(corev1.PortHeader); p == "" {
		return fmt.Errorf("%q header is required", corev1.PortHeader)
	} else if _, err := parsePort(p); err != nil {
		return err
	}
	switch t := st.Headers().Get(corev1.StreamType); t {
	case corev1.StreamTypeError, corev1.StreamTypeData:
	case "":
		return fmt.Errorf("%q header is required", corev1.StreamType)
	default:
		return fmt.Errorf("invalid stream type %q", t)
	}
	select {
	case ps.streams <- st:
		return nil
	case <-ps.done:
		return errors.New("the port forward has ended")
	}
}

// add files st with its pair; complete is true when the pair has both
// streams. A pair that stays incomplete for timeout is told so on its error
// stream and dropped.
func (ps *streamPairs) add(st httpstream.Stream, conn httpstream.Connection, timeout time.Duration) (p *streamPair, complete bool, err error) {
	id := requestID(st)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.pending[id]
	if !ok {
		p = &streamPair{complete: make(chan struct{})}
		ps.pending[id] = p
		go ps.expire(id, p, conn, timeout)
	}
	switch st.Headers().Get(corev1.StreamType) {
	case corev1.StreamTypeError:
		if p.errStream != nil {
			return nil, false, reportPairError(p, id, errors.New("error stream already assigned"))
		}
		p.errStream = st
	default:
		if p.data != nil {
			return nil, false, reportPairError(p, id, errors.New("data stream already assigned"))
		}
		p.data = st
	}
	if p.data == nil || p.errStream == nil {
		return p, false, nil
	}
	close(p.complete)
	return p, true, nil
}

// reportPairError tells the client of a stream its pair cannot take.
func reportPairError(p *streamPair, id string, err error) error {
	err = fmt.Errorf("error processing stream for request %s: %w", id, err)
	if p.errStream != nil {
		_, _ = io.WriteString(p.errStream, err.Error())
	}
	return err
}

// expire forgets the pair id once it is complete, or after timeout.
func (ps *streamPairs) expire(id string, p *streamPair, conn httpstream.Connection, timeout time.Duration) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.complete:
	case <-timer.C:
		ps.mu.Lock()
		if p.errStream != nil {
			_, _ = io.WriteString(p.errStream, fmt.Sprintf("(conn=%p, request=%s) timed out waiting for streams", conn, id))
		}
		ps.mu.Unlock()
	case <-ps.done:
	}
	ps.mu.Lock()
	delete(ps.pending, id)
	sts := streamsOf(p)
	ps.mu.Unlock()
	conn.RemoveStreams(sts...)
}

// streamsOf are the pair's streams that have come.
func streamsOf(p *streamPair) []httpstream.Stream {
	var sts []httpstream.Stream
	for _, st := range []httpstream.Stream{p.data, p.errStream} {
		if st != nil {
			sts = append(sts, st)
		}
	}
	return sts
}

// requestID is the pair a stream belongs to: its requestID header, or for
// clients older than the header, derived from the stream's identifier (the
// error stream is created first, its data stream two identifiers later).
func requestID(st httpstream.Stream) string {
	if id := st.Headers().Get(corev1.PortForwardRequestIDHeader); id != "" {
		return id
	}
	id := int(st.Identifier())
	if st.Headers().Get(corev1.StreamType) == corev1.StreamTypeData {
		id -= 2
	}
	return strconv.Itoa(id)
}
