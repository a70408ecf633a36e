package kubelet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kubelet/streaming"
	"github.com/skiff-sh/skiff/runtime"
)

// fakeStreamRuntime records the calls of the streams.
type fakeStreamRuntime struct {
	mu      sync.Mutex
	calls   []string
	stdin   bytes.Buffer
	noStdin bool
	exec    runtime.ExecConfig
	code    int
	err     error
}

func (f *fakeStreamRuntime) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *fakeStreamRuntime) Exec(_ context.Context, id string, cfg runtime.ExecConfig) (int, error) {
	f.record("exec " + id + " " + strings.Join(cfg.Args, " "))
	f.exec = cfg
	return f.code, f.err
}

func (f *fakeStreamRuntime) AttachStdin(_ context.Context, id string) (io.WriteCloser, error) {
	f.record("attach-stdin " + id)
	if f.noStdin {
		return nil, runtime.ErrNoStdin
	}
	return nopCloser{&f.stdin, f}, nil
}

func (f *fakeStreamRuntime) CloseStdin(_ context.Context, id string) error {
	f.record("close-stdin " + id)
	return nil
}

func (f *fakeStreamRuntime) ResizeTTY(_ context.Context, id string, size runtime.TerminalSize) error {
	f.record("resize " + id + " " + strings.Repeat("w", int(size.Width)) + "/" + strings.Repeat("h", int(size.Height)))
	return nil
}

type nopCloser struct {
	w io.Writer
	f *fakeStreamRuntime
}

func (n nopCloser) Write(p []byte) (int, error) { return n.w.Write(p) }
func (n nopCloser) Close() error                { n.f.record("stdin-closed"); return nil }

func streamsPod() *corev1.Pod {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	return &corev1.Pod{
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "app", Stdin: true, StdinOnce: true, TTY: true}},
			InitContainers: []corev1.Container{{Name: "init"}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "dbg", Stdin: true, TTY: true}}},
		},
		Status: corev1.PodStatus{
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: running, ContainerID: "containerd://app3", RestartCount: 3}},
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", ContainerID: "containerd://init0",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}},
			EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "dbg", State: running, ContainerID: "containerd://dbg0"}},
		},
	}
}

func TestRunningInstance(t *testing.T) {
	type want struct {
		ID      string
		Attempt int
		Err     bool
	}
	tests := map[string]want{
		"app":   {ID: "app3", Attempt: 3},
		"dbg":   {ID: "dbg0"},
		"init":  {Err: true},
		"other": {Err: true},
	}
	for name, w := range tests {
		t.Run(name, func(t *testing.T) {
			id, attempt, err := runningInstance(streamsPod(), name)
			if err != nil && !errors.Is(err, streaming.ErrContainerNotRunning) {
				t.Errorf("error %v is not ErrContainerNotRunning", err)
			}
			if diff := cmp.Diff(w, want{ID: id, Attempt: attempt, Err: err != nil}); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStreamsExec(t *testing.T) {
	rt := &fakeStreamRuntime{code: 7}
	s := &Streams{rt: rt}
	var out bytes.Buffer
	code, err := s.Exec(context.Background(), streamsPod(), "dbg", []string{"ps", "aux"}, streaming.IO{Stdout: &out})
	if err != nil || code != 7 {
		t.Fatalf("Exec = %d, %v; want 7, nil", code, err)
	}
	if diff := cmp.Diff([]string{"exec dbg0 ps aux"}, rt.calls); diff != "" {
		t.Errorf("calls (-want,+got):\n%s", diff)
	}
	if rt.exec.Stdout != &out || rt.exec.Stdin != nil || rt.exec.Resize != nil {
		t.Errorf("exec config %+v", rt.exec)
	}

	rt = &fakeStreamRuntime{err: runtime.ErrNotFound}
	s.rt = rt
	if _, err := (s).Exec(context.Background(), streamsPod(), "app", []string{"true"}, streaming.IO{}); !errors.Is(err, streaming.ErrContainerNotRunning) {
		t.Errorf("Exec on a vanished container: %v, want ErrContainerNotRunning", err)
	}
}

func TestForwardStdin(t *testing.T) {
	tests := map[string]struct {
		once, noStdin bool
		want          []string
	}{
		"until the client ends it": {want: []string{"attach-stdin app3", "stdin-closed"}},
		"stdinOnce closes the container's": {once: true,
			want: []string{"attach-stdin app3", "stdin-closed", "close-stdin app3"}},
		"no stdin": {noStdin: true, want: []string{"attach-stdin app3"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rt := &fakeStreamRuntime{noStdin: tc.noStdin}
			s := &Streams{rt: rt}
			in := strings.NewReader("ls\n")
			s.forwardStdin(context.Background(), "app3", in, tc.once, logrus.NewEntry(logrus.New()))
			if diff := cmp.Diff(tc.want, rt.calls); diff != "" {
				t.Errorf("calls (-want,+got):\n%s", diff)
			}
			if tc.noStdin && in.Len() != 0 {
				t.Errorf("%d bytes of stdin left unread", in.Len())
			}
			if want := map[bool]string{false: "ls\n", true: ""}[tc.noStdin]; rt.stdin.String() != want {
				t.Errorf("stdin %q, want %q", rt.stdin.String(), want)
			}
		})
	}
}

func TestForwardResizes(t *testing.T) {
	rt := &fakeStreamRuntime{}
	sizes := make(chan streaming.TerminalSize, 2)
	sizes <- streaming.TerminalSize{Width: 2, Height: 1}
	sizes <- streaming.TerminalSize{Width: 3, Height: 2}
	close(sizes)
	(&Streams{rt: rt}).forwardResizes(context.Background(), "dbg0", sizes, logrus.NewEntry(logrus.New()))
	if diff := cmp.Diff([]string{"resize dbg0 ww/h", "resize dbg0 www/hh"}, rt.calls); diff != "" {
		t.Errorf("calls (-want,+got):\n%s", diff)
	}
}

func TestAttachOutput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	tests := map[string]struct {
		sio  streaming.IO
		want string
		dest *bytes.Buffer
	}{
		"tty: CRLF again":        {sio: streaming.IO{Stdout: &stdout, TTY: true}, dest: &stdout, want: "a\r\nb\r\n"},
		"stdout as logged":       {sio: streaming.IO{Stdout: &stdout, Stderr: &stderr}, dest: &stdout, want: "a\nb\n"},
		"stderr when alone":      {sio: streaming.IO{Stderr: &stderr}, dest: &stderr, want: "a\nb\n"},
		"nowhere without either": {sio: streaming.IO{}, dest: &stdout, want: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			stdout.Reset()
			stderr.Reset()
			w := attachOutput(tc.sio)
			if n, err := io.WriteString(w, "a\nb\n"); n != 4 || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
			if diff := cmp.Diff(tc.want, tc.dest.String()); diff != "" {
				t.Errorf("output (-want,+got):\n%s", diff)
			}
		})
	}
}
