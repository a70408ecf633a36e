package api

import (
	"context"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kubelet/streaming"
)

// Streams is the kubelet's streaming half, the one way the API reaches the
// containers of this node's pods: exec and attach sessions, port forwards,
// and container logs. Package kubelet implements it over the container runtime and the
// log files; the API only sees this interface (and the words of package
// streaming), as kube-apiserver only proxies these subresources to the
// kubelet.
//
// For Exec and Attach the API has checked, before calling, that the pod has
// the container and that its status shows it running. Every method returns
// when its session ends or ctx ends (the client went away, or the server is
// shutting down).
type Streams interface {
	// Exec runs cmd in the container and returns its exit code. err is for
	// a failure to run it at all (no such executable, container gone…).
	Exec(ctx context.Context, pod *corev1.Pod, container string, cmd []string, sio streaming.IO) (exitCode int, err error)
	// Attach connects sio to the container's main process: stdin (when the
	// container keeps one open), its output from now on, and resizes of
	// its terminal. It returns nil when the process exits.
	Attach(ctx context.Context, pod *corev1.Pod, container string, sio streaming.IO) error
	// PortForward checks that the pod runs (a streaming.RefusalError when
	// it does not, returned before any upgrade) and returns what forwards
	// a client's stream to a port on the pod's localhost.
	PortForward(pod *corev1.Pod) (streaming.Forward, error)
	// Log opens the log of the pod's container (regular, init or
	// ephemeral) as req asks: which instance it reads, and with req.Follow
	// when it moves on to the next one, is the kubelet's decision. An error
	// that is the client's (no previous instance, a container still waiting
	// to start) is a Status error (k8s.io/apimachinery/pkg/api/errors),
	// returned before anything is streamed; write then writes the log to w
	// until it ends or ctx does, flushing w (interface{ Flush() }) whenever
	// it has caught up.
	Log(pod *corev1.Pod, container string, req streaming.LogRequest) (write func(ctx context.Context, w io.Writer) error, err error)
}
