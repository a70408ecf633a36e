package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Log streams retry a broken stream (a restarting skiffd, a network
// hiccup) with a doubling delay, and give up after maxStreamRefusals
// answers in a row that refuse it (403, 500, …).
const (
	streamRetryBase   = 100 * time.Millisecond
	streamRetryMax    = 2 * time.Second
	maxStreamRefusals = 5
	// maxLogLine is the longest piece of a log line written at once; a
	// longer line is written as several, each with the prefix.
	maxLogLine = 64 << 10
)

// streams follows the logs of every container of a Job's pods, one
// goroutine per container, from the moment it has started until it has
// ended for good, each line prefixed with [pod/container].
type streams struct {
	ctx    context.Context
	cancel context.CancelFunc
	cs     kubernetes.Interface
	ns     string
	con    *console
	retry  time.Duration // the first delay before a stream is opened again

	mu      sync.Mutex
	started map[string]bool // pod UID/container
	wg      sync.WaitGroup
}

func newStreams(ctx context.Context, cs kubernetes.Interface, ns string, con *console) *streams {
	ctx, cancel := context.WithCancel(ctx)
	return &streams{ctx: ctx, cancel: cancel, cs: cs, ns: ns, con: con, retry: streamRetryBase, started: map[string]bool{}}
}

// ensure starts following each container of pod that has started and is
// not followed yet.
func (s *streams) ensure(pod *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, st := range list {
			key := string(pod.UID) + "/" + st.Name
			if s.started[key] || !hasStarted(st) {
				continue
			}
			s.started[key] = true
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.follow(pod.Name, st.Name)
			}()
		}
	}
}

// hasStarted is whether a container has run (so that it has a log).
func hasStarted(st corev1.ContainerStatus) bool {
	return st.State.Running != nil || st.State.Terminated != nil || st.LastTerminationState.Terminated != nil || st.RestartCount > 0
}

// wait waits for every stream to end, at most timeout; then it stops them.
func (s *streams) wait(timeout time.Duration) {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
	}
	s.stop()
}

// stop ends every stream and waits for them.
func (s *streams) stop() {
	s.mu.Lock()
	s.cancel()
	s.mu.Unlock()
	s.wg.Wait()
}

// follow streams one container's log until it has ended for good, picking
// up where it left off when the stream breaks.
func (s *streams) follow(pod, container string) {
	prefix := "[" + pod + "/" + container + "] "
	var pos logPosition
	delay, refusals := s.retry, 0
	for {
		opts := &corev1.PodLogOptions{Container: container, Follow: true, Timestamps: true}
		if !pos.last.IsZero() {
			since := metav1.NewTime(pos.last)
			opts.SinceTime = &since
		}
		rc, err := s.cs.CoreV1().Pods(s.ns).GetLogs(pod, opts).Stream(s.ctx)
		if err == nil {
			refusals = 0
			err = pos.copy(rc, func(text []byte) { s.con.line(prefix, text) })
			rc.Close()
		}
		if s.ctx.Err() != nil {
			return
		}
		if apierrors.IsNotFound(err) {
			return // the pod and its logs are gone
		}
		// NOTE: a 400 says the container is not running now (a kubelet
		// answers so while it waits to restart): not a refusal.
		notRunning := apierrors.IsBadRequest(err)
		if st := apierrors.APIStatus(nil); errors.As(err, &st) && !notRunning {
			if refusals++; refusals >= maxStreamRefusals {
				s.con.message("skiff run: %sgiving up its log: %v", prefix, err)
				return
			}
		}
		if (err == nil || notRunning) && s.endedForGood(pod, container) {
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, streamRetryMax)
	}
}

// endedForGood is whether a container whose log stream ended will write
// no more: its pod is gone or finished, or it ended and will not restart.
// A stream also ends cleanly when skiffd shuts down while the container
// runs on: then it is opened again.
func (s *streams) endedForGood(pod, container string) bool {
	p, err := s.cs.CoreV1().Pods(s.ns).Get(s.ctx, pod, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		return false
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, st := range list {
			if st.Name != container || st.State.Terminated == nil {
				continue
			}
			switch {
			case p.DeletionTimestamp != nil, p.Spec.RestartPolicy == corev1.RestartPolicyNever:
				return true
			case p.Spec.RestartPolicy == corev1.RestartPolicyOnFailure && st.State.Terminated.ExitCode == 0:
				return true
			}
		}
	}
	return false
}

// logPosition is how far a container's log has been written, so that a
// stream opened again (from the second of the last line: sinceTime has
// whole seconds) writes no line twice: lines before the last timestamp
// are skipped, and at it as many as were written.
type logPosition struct {
	last   time.Time // timestamp of the last line written
	atLast int       // lines written with that timestamp
}

// copy reads "<RFC3339Nano timestamp> <text>" lines from r and hands each
// new line's text to write, until r ends (nil at a clean end).
func (p *logPosition) copy(r io.Reader, write func(text []byte)) error {
	skip := p.atLast // lines at p.last already written by an earlier stream
	resuming := !p.last.IsZero()
	br := bufio.NewReaderSize(r, maxLogLine)
	midLine, skipping := false, false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			full := chunk[len(chunk)-1] == '\n'
			text := bytes.TrimSuffix(chunk, []byte("\n"))
			if !midLine {
				ts, rest, ok := splitTimestamp(text)
				skipping = false
				if ok {
					switch {
					case resuming && ts.Before(p.last):
						skipping = true
					case resuming && ts.Equal(p.last) && skip > 0:
						skip--
						skipping = true
					case ts.Equal(p.last):
						p.atLast++
					default:
						p.last, p.atLast = ts, 1
					}
					text = rest
				}
			}
			if !skipping {
				write(text)
			}
			midLine = !full
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}

// splitTimestamp splits the timestamp off a line of a log read with
// ?timestamps=true.
func splitTimestamp(line []byte) (time.Time, []byte, bool) {
	ts, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		ts, rest = line, nil
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return time.Time{}, line, false
	}
	return t, rest, true
}
