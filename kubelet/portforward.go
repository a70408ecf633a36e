package kubelet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/containerd/containerd/pkg/netns"
	cnins "github.com/containernetworking/plugins/pkg/ns"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet/streaming"
	"github.com/skiff-sh/skiff/network"
)

// PodNetworks finds a pod's network sandbox; package network's *Network
// implements it.
type PodNetworks interface {
	Find(uid string) (sb network.Sandbox, ok bool, err error)
}

var _ PodNetworks = (*network.Network)(nil)

// halfCloseGrace is how long a forwarded connection waits for its second
// direction once the first has ended.
// NOTE: containerd CRI's port forward waits one second, then closes.
const halfCloseGrace = time.Second

// PortForward checks that the pod has a running network sandbox and returns
// the function that forwards one client stream to a port on the pod's
// localhost (the node's, for a hostNetwork pod), as containerd CRI's port
// forward does inside the sandbox's network namespace.
func (s *Streams) PortForward(pod *corev1.Pod) (streaming.Forward, error) {
	// NOTE: the kubelet looks the pod up among the runtime's running pods
	// and answers this when it has none.
	notFound := &streaming.RefusalError{Message: fmt.Sprintf("pod not found (%q)", pod.Name+"_"+pod.Namespace)}
	if s.networks == nil || kube.IsPodTerminal(pod) {
		return nil, notFound
	}
	sb, ok, err := s.networks.Find(string(pod.UID))
	if err != nil {
		return nil, fmt.Errorf("finding the network of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if !ok {
		return nil, notFound
	}
	sandbox := string(pod.UID)
	return func(ctx context.Context, port int32, stream io.ReadWriteCloser) error {
		return forwardPort(ctx, sandbox, sb.NetNSPath, port, stream)
	}, nil
}

// forwardPort connects stream to localhost:port in the network namespace at
// nsPath ("" is the node's own) and copies both ways until the connection
// ends, the client's stream does, or ctx does. Its errors are worded as
// containerd CRI's, which the client shows.
func forwardPort(ctx context.Context, sandbox, nsPath string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	where := "host"
	if nsPath != "" {
		where = nsPath
	}
	conn, err := dialLocalhost(sandbox, nsPath, port)
	if err != nil {
		return fmt.Errorf("failed to execute portforward in network namespace %q: %w", where, err)
	}
	defer conn.Close()
	done := make(chan error, 2)
	go func() {
		_, err := io.Copy(stream, conn)
		done <- err
	}()
	go func() {
		_, err := io.Copy(conn, stream)
		// The client has no more to send: the pod's server sees the end
		// of its request and may still answer.
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- err
	}()
	var first error
	select {
	case first = <-done:
	case <-ctx.Done():
		return nil
	}
	grace := time.NewTimer(halfCloseGrace)
	defer grace.Stop()
	select {
	case err := <-done:
		if first == nil {
			first = err
		}
	case <-grace.C:
	case <-ctx.Done():
	}
	if first != nil && !isClosedError(first) {
		return fmt.Errorf("failed to execute portforward in network namespace %q: %w", where, first)
	}
	return nil
}

// dialLocalhost connects to localhost:port from inside the network
// namespace at nsPath, IPv4 first and then IPv6, one after the other.
// NOTE: as containerd: Go's dual-stack dialer would race both families on
// other goroutines, outside the namespace; the socket belongs to the
// namespace of the thread that creates it.
func dialLocalhost(sandbox, nsPath string, port int32) (net.Conn, error) {
	var conn net.Conn
	dial := func(cnins.NetNS) error {
		addr := fmt.Sprintf("localhost:%d", port)
		var err4, err6 error
		if conn, err4 = net.Dial("tcp4", addr); err4 == nil {
			return nil
		}
		if conn, err6 = net.Dial("tcp6", addr); err6 == nil {
			return nil
		}
		return fmt.Errorf("failed to connect to localhost:%d inside namespace %q, IPv4: %v IPv6 %v ", port, sandbox, err4, err6)
	}
	var err error
	if nsPath == "" {
		err = dial(nil)
	} else {
		err = netns.LoadNetNS(nsPath).Do(dial)
	}
	return conn, err
}

// isClosedError: the copy ended because one side was closed under it, the
// normal end of a forwarded connection.
func isClosedError(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe)
}
