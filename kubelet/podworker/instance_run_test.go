package podworker

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/runtime"
)

// fakeContainerd is a Runtime that keeps its instances in memory and fails
// operations as a test scripts it, to drive the worker's lifecycle
// decisions without containerd.
type fakeContainerd struct {
	Runtime // what the tests do not use

	mu        sync.Mutex
	instances map[string]*fakeInstance
	exitCode  int32              // what a started instance exits with
	fail      map[string][]error // per operation, what its next calls return
	// despite is what happened in containerd although the operation's call
	// failed (e.g. the task started before the connection broke).
	despite map[string]func(*fakeInstance)
	calls   map[string]int
}

type fakeInstance struct {
	state       runtime.ContainerState
	exit        *runtime.ExitStatus
	taskCreated bool
	// pendingStart: a start request cut short is still on its way to the
	// shim; it lands before whatever comes next for the instance.
	pendingStart bool
}

func newFakeContainerd(exitCode int32) *fakeContainerd {
	return &fakeContainerd{
		instances: map[string]*fakeInstance{}, exitCode: exitCode,
		fail: map[string][]error{}, despite: map[string]func(*fakeInstance){}, calls: map[string]int{},
	}
}

// call counts op and returns the error scripted for this call, having
// applied what happened despite it to instance id.
func (f *fakeContainerd) call(op, id string) error {
	f.calls[op]++
	errs := f.fail[op]
	if len(errs) == 0 {
		return nil
	}
	f.fail[op] = errs[1:]
	if errs[0] != nil {
		if d := f.despite[op]; d != nil && f.instances[id] != nil {
			d(f.instances[id])
		}
	}
	return errs[0]
}

func (f *fakeContainerd) EnsureImage(context.Context, string, runtime.PullPolicy) error { return nil }

func (f *fakeContainerd) EnsureImageWithProgress(context.Context, string, runtime.PullPolicy, func(runtime.Progress)) error {
	return nil
}

func (f *fakeContainerd) ImageInfo(_ context.Context, ref string) (runtime.ImageInfo, error) {
	return runtime.ImageInfo{Ref: "docker.io/library/" + ref, ID: "docker.io/library/busybox@sha256:0"}, nil
}

func (f *fakeContainerd) Create(_ context.Context, cfg runtime.ContainerConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("create", cfg.ID); err != nil {
		return err
	}
	if f.instances[cfg.ID] != nil {
		return fmt.Errorf("creating %q: %w", cfg.ID, errdefs.ErrAlreadyExists)
	}
	f.instances[cfg.ID] = &fakeInstance{state: runtime.StateCreated}
	return nil
}

func (f *fakeContainerd) Start(_ context.Context, id string) (time.Time, <-chan runtime.ExitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.instances[id]
	if in == nil {
		return time.Time{}, nil, fmt.Errorf("container %q: %w", id, runtime.ErrNotFound)
	}
	if err := f.call("start", id); err != nil {
		return time.Time{}, nil, err
	}
	if in.state != runtime.StateCreated {
		return time.Time{}, nil, fmt.Errorf("starting %q: %w", id, runtime.ErrStarted)
	}
	// Whichever start comes first runs the container (a pending one, or this).
	in.state, in.taskCreated, in.pendingStart = runtime.StateRunning, false, false
	f.calls["started"]++
	return time.Now(), f.exited(in), nil
}

// exited ends a running instance at once and returns its exit channel.
func (f *fakeContainerd) exited(in *fakeInstance) <-chan runtime.ExitStatus {
	st := runtime.ExitStatus{Code: f.exitCode, ExitedAt: time.Now()}
	in.state, in.exit = runtime.StateExited, &st
	ch := make(chan runtime.ExitStatus, 1)
	ch <- st
	return ch
}

func (f *fakeContainerd) Wait(_ context.Context, id string) (<-chan runtime.ExitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.instances[id]
	if in == nil || in.state != runtime.StateRunning {
		return nil, fmt.Errorf("task of %q: %w", id, runtime.ErrNotFound)
	}
	return f.exited(in), nil
}

func (f *fakeContainerd) Inspect(_ context.Context, id string) (runtime.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("inspect", id); err != nil {
		return runtime.Container{}, err
	}
	in := f.instances[id]
	if in == nil {
		return runtime.Container{}, fmt.Errorf("container %q: %w", id, runtime.ErrNotFound)
	}
	return runtime.Container{ID: id, State: in.state, Exit: in.exit, TaskCreated: in.taskCreated}, nil
}

func (f *fakeContainerd) Remove(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("remove", id); err != nil {
		return err
	}
	if in := f.instances[id]; in != nil && in.pendingStart {
		f.calls["started"]++ // the late start ran it before the kill
	}
	delete(f.instances, id)
	return nil
}

func (f *fakeContainerd) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// TestInstanceRetries drives one container instance through the worker
// while the fake containerd fails as containerd does when it restarts, and
// checks what the store ends up recording.
func TestInstanceRetries(t *testing.T) {
	unavailable := fmt.Errorf("starting task: error reading from server: EOF: %w", errdefs.ErrUnavailable)
	tests := map[string]struct {
		exitCode    int32
		fail        map[string][]error
		despite     map[string]func(*fakeInstance)
		wantReason  string
		wantCode    int32
		wantStarted int // times the container really started
		wantEvent   string
	}{
		"containerd restarts before the task exists": {
			fail:       map[string][]error{"start": {unavailable}},
			wantReason: reasonCompleted, wantStarted: 1, wantEvent: "Warning FailedSync",
		},
		"containerd restarts after the task started": {
			exitCode:   4,
			fail:       map[string][]error{"start": {unavailable}},
			despite:    map[string]func(*fakeInstance){"start": func(in *fakeInstance) { in.state = runtime.StateRunning }},
			wantReason: reasonError, wantCode: 4, wantStarted: 0, wantEvent: "Warning FailedSync",
		},
		"a start cut short reaches the shim after the task was read": {
			fail: map[string][]error{"start": {unavailable}},
			despite: map[string]func(*fakeInstance){"start": func(in *fakeInstance) {
				in.taskCreated, in.pendingStart = true, true
			}},
			wantReason: reasonCompleted, wantStarted: 1, wantEvent: "Warning FailedSync",
		},
		"containerd stops while making the task and kills it": {
			// NOTE: the runtime reports a task stopped before it was asked
			// to start as never started (its exit 137 is containerd's).
			fail: map[string][]error{"start": {fmt.Errorf("creating task: error reading from server: EOF: %w", errdefs.ErrUnavailable)}},
			despite: map[string]func(*fakeInstance){"start": func(in *fakeInstance) {
				in.state, in.taskCreated = runtime.StateCreated, false
			}},
			wantReason: reasonCompleted, wantStarted: 1, wantEvent: "Warning FailedSync",
		},
		"containerd unavailable while creating and inspecting": {
			fail:       map[string][]error{"create": {unavailable, unavailable}, "inspect": {unavailable}},
			wantReason: reasonCompleted, wantStarted: 1, wantEvent: "Warning FailedSync",
		},
		"the container's own failure is a StartError": {
			fail:       map[string][]error{"start": {fmt.Errorf("creating task: %w: exec: no such file", runtime.ErrStartFailed)}},
			wantReason: reasonStartError, wantCode: 128, wantStarted: 0, wantEvent: "Warning Failed",
		},
		"an exit recorded while the removal fails is kept": {
			exitCode:   0,
			fail:       map[string][]error{"remove": {unavailable, unavailable}},
			wantReason: reasonCompleted, wantStarted: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rt := newFakeContainerd(tc.exitCode)
			for op, errs := range tc.fail {
				rt.fail[op] = errs
			}
			for op, d := range tc.despite {
				rt.despite[op] = d
			}
			rec := &fakeRecorder{}
			w, cs := runOneInstance(t, rt, rec)
			term := cs.State.Terminated
			if term == nil || term.Reason != tc.wantReason || term.ExitCode != tc.wantCode {
				t.Fatalf("recorded %+v; want terminated %s with exit %d", cs.State, tc.wantReason, tc.wantCode)
			}
			if got := rt.count("started"); got != tc.wantStarted {
				t.Errorf("the container ran %d times through Start; want %d", got, tc.wantStarted)
			}
			if tc.wantEvent != "" && !strings.Contains(strings.Join(rec.events, "\n"), tc.wantEvent) {
				t.Errorf("events %q lack %q", rec.events, tc.wantEvent)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				rt.mu.Lock()
				left := len(rt.instances)
				rt.mu.Unlock()
				if left == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("instance not removed after %d tries", rt.count("remove"))
				}
				time.Sleep(time.Millisecond)
			}
			w.m.wg.Wait()
		})
	}
}

// runOneInstance runs instance 0 of a one-container pod on rt and returns
// the container's stored status.
func runOneInstance(t *testing.T, rt Runtime, rec Recorder) (*worker, corev1.ContainerStatus) {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{
			{Name: "main", Image: "busybox:1.35", ImagePullPolicy: corev1.PullIfNotPresent},
		}},
	}
	if err := store.Create(db.Pods, pod); err != nil {
		t.Fatal(err)
	}
	m := New(Config{Store: store, Runtime: rt, NodeName: "node", LogRoot: t.TempDir(), Recorder: rec})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m.ctx = ctx
	m.retryDelay = func(int) time.Duration { return time.Millisecond }
	stored, err := store.Get(db.Pods, "default", "p")
	if err != nil {
		t.Fatal(err)
	}
	pod = stored.(*corev1.Pod)
	w := newWorker(m, pod, nil)
	r := newContainerRun(w, pod, &pod.Spec.Containers[0], kindRegular)
	if _, _, ok := r.runInstance(ctx); !ok {
		t.Fatal("runInstance did not finish")
	}
	got, err := w.load()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(1, len(got.Status.ContainerStatuses)); diff != "" {
		t.Fatalf("container statuses (-want,+got):\n%s", diff)
	}
	return w, got.Status.ContainerStatuses[0]
}
