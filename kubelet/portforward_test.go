package kubelet

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/kubelet/streaming"
	"github.com/skiff-sh/skiff/network"
)

// fakeNetworks has the sandboxes of the uids it holds.
type fakeNetworks map[string]network.Sandbox

func (f fakeNetworks) Find(uid string) (network.Sandbox, bool, error) {
	sb, ok := f[uid]
	return sb, ok, nil
}

// pipeStream is the client's side of a forwarded connection: what it
// writes, then the end of its input; what comes back is collected.
type pipeStream struct {
	io.Reader
	out strings.Builder
}

func (p *pipeStream) Write(b []byte) (int, error) { return p.out.Write(b) }
func (p *pipeStream) Close() error                { return nil }

func TestPortForward(t *testing.T) {
	pod := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: k8stypes.UID("uid-" + name)},
			Status: corev1.PodStatus{Phase: phase}}
	}
	// A hostNetwork pod's sandbox has no namespace: its localhost is the node's.
	s := NewStreams(nil, nil, t.TempDir(), fakeNetworks{"uid-host": {IP: "192.0.2.1"}, "uid-done": {}})
	for name, p := range map[string]*corev1.Pod{"no sandbox": pod("gone", corev1.PodRunning), "ended": pod("done", corev1.PodSucceeded)} {
		_, err := s.PortForward(p)
		var refusal *streaming.RefusalError
		if !errors.As(err, &refusal) || refusal.Message != `pod not found ("`+p.Name+`_ns")` || refusal.Code != 0 {
			t.Errorf("%s: %v, want the kubelet's pod not found", name, err)
		}
	}

	forward, err := s.PortForward(pod("host", corev1.PodRunning))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		req, _ := io.ReadAll(conn) // until the client's side ends
		_, _ = conn.Write(append([]byte("got "), req...))
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	client := &pipeStream{Reader: strings.NewReader("ping")}
	if err := forward(context.Background(), int32(port), client); err != nil || client.out.String() != "got ping" {
		t.Errorf("forward to a listening port: %q %v", client.out.String(), err)
	}

	// Nothing listens on a port that was just freed.
	free, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freePort := free.Addr().(*net.TCPAddr).Port
	free.Close()
	err = forward(context.Background(), int32(freePort), &pipeStream{Reader: strings.NewReader("")})
	want := `failed to execute portforward in network namespace "host": failed to connect to localhost:` + strconv.Itoa(freePort) + ` inside namespace "uid-host", IPv4: dial tcp4 127.0.0.1:` + strconv.Itoa(freePort) + `: connect: connection refused IPv6 `
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("forward to a closed port: %v\nwant it to start with %s", err, want)
	}
}
