package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/exec"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kubelet/streaming"
)

// fakeStreams records what the API hands to the node side and plays a
// scripted session.
type fakeStreams struct {
	mu    sync.Mutex
	calls []string // "exec <container> <cmd…>" / "attach <container>" / "log <container>"
	run   func(ctx context.Context, cmd []string, sio streaming.IO) (int, error)
}

func (f *fakeStreams) Exec(ctx context.Context, pod *corev1.Pod, container string, cmd []string, sio streaming.IO) (int, error) {
	f.record("exec " + container + " " + strings.Join(cmd, " "))
	return f.run(ctx, cmd, sio)
}

func (f *fakeStreams) Attach(ctx context.Context, pod *corev1.Pod, container string, sio streaming.IO) error {
	f.record("attach " + container)
	_, err := f.run(ctx, nil, sio)
	return err
}

// Log writes nothing: these tests exercise exec and attach (the API's log
// tests run over the kubelet's own Streams).
func (f *fakeStreams) Log(pod *corev1.Pod, container string, req streaming.LogRequest) (func(context.Context, io.Writer) error, error) {
	f.record("log " + container)
	return func(context.Context, io.Writer) error { return nil }, nil
}

// PortForward forwards to an echo server: each connection gets "<port>:"
// and then what it sends, back; port 9 has nothing listening.
func (f *fakeStreams) PortForward(pod *corev1.Pod) (streaming.Forward, error) {
	f.record("portforward " + pod.Name)
	return func(ctx context.Context, port int32, stream io.ReadWriteCloser) error {
		defer stream.Close()
		if port == 9 {
			return errors.New("connection refused")
		}
		if _, err := fmt.Fprintf(stream, "%d:", port); err != nil {
			return err
		}
		_, err := io.Copy(stream, stream)
		return err
	}, nil
}

func (f *fakeStreams) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

// newStreamServer is an API server with streams over a store holding pods.
func newStreamServer(t *testing.T, streams Streams, pods ...*corev1.Pod) *httptest.Server {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	for _, p := range pods {
		if err := store.Create(db.Pods, p); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
	}
	srv := httptest.NewServer(New(Config{Store: store, NodeName: "node-a", Streams: streams}))
	t.Cleanup(func() {
		srv.Close()
		_ = store.Close()
	})
	return srv
}

// runningPod is a pod whose containers all run.
func runningPod(name string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: "node-a"},
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox:1.35"})
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
	return pod
}

// executor is a client-go remote command client of one protocol.
type executor func(t *testing.T, u *url.URL) remotecommand.Executor

var executors = map[string]executor{
	"websocket v5": func(t *testing.T, u *url.URL) remotecommand.Executor {
		e, err := remotecommand.NewWebSocketExecutor(&rest.Config{Host: u.Host}, "GET", u.String())
		if err != nil {
			t.Fatal(err)
		}
		return e
	},
	"websocket v4": func(t *testing.T, u *url.URL) remotecommand.Executor {
		e, err := remotecommand.NewWebSocketExecutorForProtocols(&rest.Config{Host: u.Host}, "GET", u.String(), "v4.channel.k8s.io")
		if err != nil {
			t.Fatal(err)
		}
		return e
	},
	"spdy v4": func(t *testing.T, u *url.URL) remotecommand.Executor {
		e, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: u.Host}, "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		return e
	},
}

// sizes is a TerminalSizeQueue that yields its sizes, then ends.
type sizes struct {
	c chan remotecommand.TerminalSize
}

func (s sizes) Next() *remotecommand.TerminalSize {
	size, ok := <-s.c
	if !ok {
		return nil
	}
	return &size
}

func TestExecSessions(t *testing.T) {
	type result struct {
		Stdout, Stderr string
		ExitCode       int // -1: no exit code (nil error or another error)
		Err            string
		Calls          []string
	}
	tests := map[string]struct {
		query string
		stdin string
		// stdinEOF: the session needs the end of stdin, which WebSocket v4
		// cannot signal (v5 added the close signal for it).
		stdinEOF bool
		tty      bool
		resize   []remotecommand.TerminalSize
		run      func(ctx context.Context, cmd []string, sio streaming.IO) (int, error)
		want     result
	}{
		"stdout and stderr": {
			query: "command=sh&command=-c&command=echo+hi&stdout=true&stderr=true",
			run: func(_ context.Context, _ []string, sio streaming.IO) (int, error) {
				io.WriteString(sio.Stdout, "out\n")
				io.WriteString(sio.Stderr, "err\n")
				return 0, nil
			},
			want: result{Stdout: "out\n", Stderr: "err\n", ExitCode: -1, Calls: []string{"exec c sh -c echo hi"}},
		},
		"non-zero exit code": {
			query: "command=false&stdout=true&stderr=true",
			run:   func(context.Context, []string, streaming.IO) (int, error) { return 3, nil },
			want: result{ExitCode: 3, Err: "command terminated with exit code 3",
				Calls: []string{"exec c false"}},
		},
		"stdin until it ends": {
			query:    "command=cat&stdin=true&stdout=true&stderr=true",
			stdin:    "line one\nline two\n",
			stdinEOF: true,
			run: func(_ context.Context, _ []string, sio streaming.IO) (int, error) {
				_, err := io.Copy(sio.Stdout, sio.Stdin)
				return 0, err
			},
			want: result{Stdout: "line one\nline two\n", ExitCode: -1, Calls: []string{"exec c cat"}},
		},
		"tty with resizes": {
			query:  "command=sh&stdin=true&stdout=true&tty=true",
			tty:    true,
			resize: []remotecommand.TerminalSize{{Width: 80, Height: 24}, {Width: 120, Height: 40}},
			run: func(_ context.Context, _ []string, sio streaming.IO) (int, error) {
				if sio.Stderr != nil {
					return 1, errors.New("stderr with a tty")
				}
				for range 2 {
					size := <-sio.Resize
					fmt.Fprintf(sio.Stdout, "%dx%d\r\n", size.Width, size.Height)
				}
				return 0, nil
			},
			want: result{Stdout: "80x24\r\n120x40\r\n", ExitCode: -1, Calls: []string{"exec c sh"}},
		},
		"command cannot run": {
			query: "command=nope&stdout=true",
			run: func(context.Context, []string, streaming.IO) (int, error) {
				return 0, errors.New(`exec: "nope": executable file not found in $PATH`)
			},
			want: result{ExitCode: -1, Err: `Internal error occurred: error executing command in container: exec: "nope": executable file not found in $PATH`,
				Calls: []string{"exec c nope"}},
		},
	}
	for proto, newExecutor := range executors {
		for name, tc := range tests {
			if tc.stdinEOF && proto == "websocket v4" {
				continue // v4.channel.k8s.io over WebSocket has no stdin close signal
			}
			t.Run(proto+"/"+name, func(t *testing.T) {
				streams := &fakeStreams{run: tc.run}
				srv := newStreamServer(t, streams, runningPod("p", "c"))
				u, _ := url.Parse(srv.URL + "/api/v1/namespaces/default/pods/p/exec?" + tc.query)
				var stdout, stderr bytes.Buffer
				opts := remotecommand.StreamOptions{Stdout: &stdout, Tty: tc.tty}
				if strings.Contains(tc.query, "stderr=true") {
					opts.Stderr = &stderr
				}
				if strings.Contains(tc.query, "stdin=true") {
					opts.Stdin = strings.NewReader(tc.stdin)
				}
				if tc.tty {
					q := sizes{c: make(chan remotecommand.TerminalSize, len(tc.resize))}
					for _, s := range tc.resize {
						q.c <- s
					}
					close(q.c)
					opts.TerminalSizeQueue = q
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				err := newExecutor(t, u).StreamWithContext(ctx, opts)
				got := result{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: -1, Calls: streams.calls}
				if err != nil {
					got.Err = err.Error()
				}
				var exitErr exec.ExitError
				if errors.As(err, &exitErr) {
					got.ExitCode = exitErr.ExitStatus()
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("session (-want,+got):\n%s", diff)
				}
			})
		}
	}
}

func TestAttachSession(t *testing.T) {
	for proto, newExecutor := range executors {
		t.Run(proto, func(t *testing.T) {
			streams := &fakeStreams{run: func(_ context.Context, _ []string, sio streaming.IO) (int, error) {
				line, err := bufio.NewReader(sio.Stdin).ReadString('\n')
				io.WriteString(sio.Stdout, line)
				return 0, err
			}}
			srv := newStreamServer(t, streams, runningPod("p", "a", "b"))
			u, _ := url.Parse(srv.URL + "/api/v1/namespaces/default/pods/p/attach?container=b&stdin=true&stdout=true")
			var stdout bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := newExecutor(t, u).StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("typed\n"), Stdout: &stdout})
			if err != nil {
				t.Fatalf("attach: %v", err)
			}
			if diff := cmp.Diff("typed\n", stdout.String()); diff != "" {
				t.Errorf("output (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"attach b"}, streams.calls); diff != "" {
				t.Errorf("calls (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStreamRequestErrors(t *testing.T) {
	multi := runningPod("multi", "a", "b")
	multi.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	stopped := runningPod("stopped", "c")
	stopped.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	debug := runningPod("debug", "c")
	debug.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg"}}}
	debug.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "dbg", State: corev1.ContainerState{
		Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}

	type want struct {
		Code    int
		Message string
	}
	tests := map[string]struct {
		path string
		want want
	}{
		"no such pod": {"/pods/nope/exec?command=ls&stdout=1",
			want{404, `pods "nope" not found`}},
		"container must be chosen": {"/pods/multi/exec?command=ls&stdout=1",
			want{400, "a container name must be specified for pod multi, choose one of: [a b] or one of the init containers: [init]"}},
		"unknown container": {"/pods/multi/exec?container=z&command=ls&stdout=1",
			want{400, "container z is not valid for pod multi"}},
		"no streams": {"/pods/multi/exec?container=a&command=ls",
			want{400, "you must specify at least 1 of stdin, stdout, stderr"}},
		"false streams": {"/pods/multi/exec?container=a&command=ls&stdout=false&stderr=0",
			want{400, "you must specify at least 1 of stdin, stdout, stderr"}},
		"no command": {"/pods/multi/exec?container=a&stdout=true",
			want{400, "you must specify at least one command for the container"}},
		"not running": {"/pods/stopped/exec?command=ls&stdout=true",
			want{500, `container not found ("c")` + "\n"}},
		"ephemeral not yet running": {"/pods/debug/attach?container=dbg&stdin=true&stdout=true&tty=true",
			want{500, "container dbg not found in pod debug_default\n"}},
		"attach wrong method": {"/pods/multi/attach?container=a&stdout=1",
			want{405, `DELETE is not supported on resources of kind "pods/attach"`}},
	}
	srv := newStreamServer(t, &fakeStreams{}, multi, stopped, debug)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			method := http.MethodPost
			if name == "attach wrong method" {
				method = http.MethodDelete
			}
			req, _ := http.NewRequest(method, srv.URL+"/api/v1/namespaces/default"+tc.path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			// The kubelet's refusals are text, the API's a Status.
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			msg := string(body)
			var st metav1.Status
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
				if err := json.Unmarshal(body, &st); err != nil {
					t.Fatalf("decoding status: %v", err)
				}
				msg = st.Message
			}
			if diff := cmp.Diff(tc.want, want{resp.StatusCode, msg}); diff != "" {
				t.Errorf("answer (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestStreamsUnavailable(t *testing.T) {
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Create(db.Pods, runningPod("p", "c")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(Config{Store: store}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/api/v1/namespaces/default/pods/p/exec?command=ls&stdout=1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("status %d, want 503", resp.StatusCode)
	}
}

// TestLogUnavailable: without the kubelet's Streams, /log answers 503 as
// exec does, never a 500 or a panic.
func TestLogUnavailable(t *testing.T) {
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Create(db.Pods, runningPod("p", "c")); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(Config{Store: store}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/api/v1/namespaces/default/pods/p/log")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st metav1.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || st.Reason != metav1.StatusReasonServiceUnavailable {
		t.Errorf("status %d, reason %q; want 503 ServiceUnavailable", resp.StatusCode, st.Reason)
	}
}

func TestQueryBool(t *testing.T) {
	tests := map[string]bool{"": false, "stdin=": true, "stdin=1": true, "stdin=true": true, "stdin=True": true,
		"stdin=0": false, "stdin=false": false, "stdin=FALSE": false, "stdin=yes": true}
	for query, want := range tests {
		q, _ := url.ParseQuery(query)
		if got := queryBool(q, "stdin"); got != want {
			t.Errorf("queryBool(%q) = %v, want %v", query, got, want)
		}
	}
}
