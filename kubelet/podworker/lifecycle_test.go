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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/runtime"
)

// The pod lifecycle as the kubelet runs it, driven through a whole Manager
// (store watch, admission, workers, recovery) against a scripted runtime
// and an injected clock: no containerd, no real containers.

// script says how the instances of one container behave, by attempt.
type script struct {
	exits []int32 // exit code per attempt; the last repeats
	// runs: the instance runs until it is stopped (exit 143 on SIGTERM,
	// or 137 when it ignores it: the runtime's escalation to SIGKILL).
	runs        bool
	ignoresTerm bool
	// slowStop: a stop waits out its grace (the caller's context, in the
	// test) and leaves the container running.
	slowStop  bool
	probeCode int // what an exec probe (or hook) in it returns
	// execGate, when set, holds every exec after the first gateAfter
	// until it is closed.
	execGate  chan struct{}
	gateAfter int
}

// scriptedRuntime is a Runtime whose containers behave as their scripts
// say; it records what the worker asked of it.
type scriptedRuntime struct {
	Runtime // what the lifecycle does not use

	clock   *testClock
	scripts map[string]script // by container name

	mu        sync.Mutex
	instances map[string]*scriptedInstance
	created   map[string]int // by container name
	started   map[string]int
	stops     []time.Duration // grace of every Stop, in order
	lists     int             // calls of List: recoveries and sweeps
	execs     int             // calls of Exec
}

type scriptedInstance struct {
	cfg       runtime.ContainerConfig
	state     runtime.ContainerState
	startedAt time.Time
	exit      *runtime.ExitStatus
	exited    chan runtime.ExitStatus // buffered: the one exit
	// unanswered: how many more reads find its shim not answering (List
	// reports StateUnknown, Inspect a transient error).
	unanswered int
}

func newScriptedRuntime(clock *testClock, scripts map[string]script) *scriptedRuntime {
	return &scriptedRuntime{clock: clock, scripts: scripts, instances: map[string]*scriptedInstance{},
		created: map[string]int{}, started: map[string]int{}}
}

func (s *scriptedRuntime) EnsureImage(context.Context, string, runtime.PullPolicy) error { return nil }

func (s *scriptedRuntime) EnsureImageWithProgress(context.Context, string, runtime.PullPolicy, func(runtime.Progress)) error {
	return nil
}

func (s *scriptedRuntime) ImageInfo(_ context.Context, ref string) (runtime.ImageInfo, error) {
	return runtime.ImageInfo{Ref: "docker.io/library/" + ref, ID: "sha256:0"}, nil
}

func (s *scriptedRuntime) SweepLeftovers(context.Context) error { return nil }

func (s *scriptedRuntime) Create(_ context.Context, cfg runtime.ContainerConfig) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.instances[cfg.ID] != nil {
		return fmt.Errorf("creating %q: %w", cfg.ID, errdefs.ErrAlreadyExists)
	}
	s.instances[cfg.ID] = &scriptedInstance{cfg: cfg, state: runtime.StateCreated, exited: make(chan runtime.ExitStatus, 1)}
	s.created[cfg.Labels[runtime.LabelContainerName]]++
	return nil
}

// add puts an instance in place as an earlier run of skiffd left it.
func (s *scriptedRuntime) add(id string, labels map[string]string, state runtime.ContainerState, exit *runtime.ExitStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := &scriptedInstance{cfg: runtime.ContainerConfig{ID: id, Labels: labels}, state: state, exit: exit,
		startedAt: s.clock.Now().Add(-time.Minute), exited: make(chan runtime.ExitStatus, 1)}
	if exit != nil {
		in.exited <- *exit
	}
	s.instances[id] = in
}

func (s *scriptedRuntime) Start(_ context.Context, id string) (time.Time, <-chan runtime.ExitStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[id]
	switch {
	case in == nil:
		return time.Time{}, nil, fmt.Errorf("container %q: %w", id, runtime.ErrNotFound)
	case in.state != runtime.StateCreated:
		return time.Time{}, nil, fmt.Errorf("starting %q: %w", id, runtime.ErrStarted)
	}
	name := in.cfg.Labels[runtime.LabelContainerName]
	attempt := s.started[name]
	s.started[name]++
	in.state, in.startedAt = runtime.StateRunning, s.clock.Now()
	sc := s.scripts[name]
	if !sc.runs {
		code := sc.exits[min(attempt, len(sc.exits)-1)]
		s.finish(in, code)
	}
	return in.startedAt, in.exited, nil
}

// finish ends a running instance with code.
func (s *scriptedRuntime) finish(in *scriptedInstance, code int32) {
	st := runtime.ExitStatus{Code: code, ExitedAt: s.clock.Now()}
	in.state, in.exit = runtime.StateExited, &st
	in.exited <- st
}

// exit ends the running instance of container name with code.
func (s *scriptedRuntime) exit(t *testing.T, name string, code int32) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, in := range s.instances {
		if in.cfg.Labels[runtime.LabelContainerName] == name && in.state == runtime.StateRunning {
			s.finish(in, code)
			return
		}
	}
	t.Fatalf("no running instance of %s", name)
}

func (s *scriptedRuntime) Wait(_ context.Context, id string) (<-chan runtime.ExitStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[id]
	if in == nil || in.state == runtime.StateCreated {
		return nil, fmt.Errorf("task of %q: %w", id, runtime.ErrNotFound)
	}
	return in.exited, nil
}

func (s *scriptedRuntime) Exec(_ context.Context, id string, cfg runtime.ExecConfig) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[id]
	if in == nil || in.state != runtime.StateRunning {
		return 0, fmt.Errorf("exec in %q: %w", id, runtime.ErrNotFound)
	}
	s.execs++
	sc := s.scripts[in.cfg.Labels[runtime.LabelContainerName]]
	if sc.execGate != nil && s.execs > sc.gateAfter {
		s.mu.Unlock()
		<-sc.execGate
		s.mu.Lock()
	}
	code := sc.probeCode
	if code != 0 && cfg.Stderr != nil {
		fmt.Fprintf(cfg.Stderr, "%s: exit %d", strings.Join(cfg.Args, " "), code)
	}
	return code, nil
}

func (s *scriptedRuntime) Stop(ctx context.Context, id string, grace time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stops = append(s.stops, grace)
	in := s.instances[id]
	if in == nil || in.state != runtime.StateRunning {
		return nil
	}
	if s.scripts[in.cfg.Labels[runtime.LabelContainerName]].slowStop {
		s.mu.Unlock()
		<-ctx.Done()
		s.mu.Lock()
		return ctx.Err()
	}
	code := int32(143)
	if s.scripts[in.cfg.Labels[runtime.LabelContainerName]].ignoresTerm {
		code = 137
	}
	s.finish(in, code)
	return nil
}

func (s *scriptedRuntime) Remove(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.instances, id)
	return nil
}

func (s *scriptedRuntime) List(context.Context) ([]runtime.Container, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	var list []runtime.Container
	for id, in := range s.instances {
		c := runtime.Container{ID: id, Labels: in.cfg.Labels, State: in.state, StartedAt: in.startedAt, Exit: in.exit}
		if in.unanswered > 0 {
			c.State, c.Exit = runtime.StateUnknown, nil
		}
		list = append(list, c)
	}
	return list, nil
}

func (s *scriptedRuntime) Inspect(_ context.Context, id string) (runtime.Container, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[id]
	if in == nil {
		return runtime.Container{}, fmt.Errorf("container %q: %w", id, runtime.ErrNotFound)
	}
	if in.unanswered > 0 {
		in.unanswered--
		return runtime.Container{}, fmt.Errorf("reading task of %q: %w", id, runtime.ErrTaskUnknown)
	}
	return runtime.Container{ID: id, Labels: in.cfg.Labels, State: in.state, StartedAt: in.startedAt, Exit: in.exit}, nil
}

func (s *scriptedRuntime) counts(name string) (created, started, left int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.created[name], s.started[name], len(s.instances)
}

func (s *scriptedRuntime) graces() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.stops...)
}

// testClock is the Manager's injected clock: real time moved by an offset
// the test sets, so that what the worker computes from Now (start times,
// finish times, deadlines, back-off left) follows the test.
type testClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// lifecycle is one Manager on a fresh store and a scripted runtime.
type lifecycle struct {
	t     *testing.T
	store *db.Store
	rt    *scriptedRuntime
	rec   *fakeRecorder
	clock *testClock
	stop  func()
	m     *Manager // the running one
}

func newLifecycle(t *testing.T, scripts map[string]script, opts ...db.Option) *lifecycle {
	t.Helper()
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clock := &testClock{offset: 10 * time.Hour}
	l := &lifecycle{t: t, store: store, rt: newScriptedRuntime(clock, scripts), rec: &fakeRecorder{}, clock: clock}
	t.Cleanup(func() {
		if l.stop != nil {
			l.stop()
		}
	})
	return l
}

// run starts the Manager; it stops at the end of the test.
func (l *lifecycle) run() {
	m := New(Config{
		Store: l.store, Runtime: l.rt, NodeName: "node", HostIP: "192.0.2.1",
		LogRoot: l.t.TempDir(), VolumeRoot: l.t.TempDir(), Recorder: l.rec, SchedulerRecorder: l.rec,
		RestartBackoffBase: time.Millisecond, RestartBackoffMax: time.Second,
		Now: l.clock.Now,
	})
	m.retryDelay = func(int) time.Duration { return time.Millisecond }
	l.m = m
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	l.stop = func() {
		cancel()
		if err := <-done; err != nil {
			l.t.Errorf("Manager.Run: %v", err)
		}
	}
}

// restart stops the Manager and runs a new one on the same store and
// runtime: a restart of skiffd.
func (l *lifecycle) restart() {
	l.halt()
	l.run()
}

// halt stops the Manager: skiffd stopping.
func (l *lifecycle) halt() {
	l.stop()
	l.stop = nil
}

// markDeleted gives the stored pod name a deletion timestamp of now and
// grace seconds, as a DELETE through the API does.
func (l *lifecycle) markDeleted(name string, grace int64) {
	l.t.Helper()
	obj, err := l.store.Get(db.Pods, "default", name)
	if err != nil {
		l.t.Fatal(err)
	}
	pod := obj.(*corev1.Pod)
	now := metav1.NewTime(l.clock.Now())
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, &grace
	if err := l.store.Update(db.Pods, pod); err != nil {
		l.t.Fatal(err)
	}
}

func (l *lifecycle) create(pod *corev1.Pod) {
	l.t.Helper()
	pod.Namespace = "default"
	pod.UID = types.UID("uid-" + pod.Name)
	pod.Spec.NodeName = "node"
	if err := l.store.Create(db.Pods, pod); err != nil {
		l.t.Fatal(err)
	}
}

// waitPod waits until the stored pod satisfies cond.
func (l *lifecycle) waitPod(name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		obj, err := l.store.Get(db.Pods, "default", name)
		if err == nil && cond(obj.(*corev1.Pod)) {
			return obj.(*corev1.Pod)
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("pod %s never %s; last: %+v %v\nevents: %q", name, what, obj, err, l.rec.all())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (l *lifecycle) waitGone(name string) {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := l.store.Get(db.Pods, "default", name); err != nil {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("pod %s never removed; events: %q", name, l.rec.all())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitRemoved waits until no instance of the container is left: a
// finished container is removed off the pod's path (releaseInstance), so it
// may outlive the pod object for a moment, as on a kubelet.
func (l *lifecycle) waitRemoved(container string) {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, left := l.rt.counts(container)
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("%d instances of %s never removed", left, container)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *fakeRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (r *fakeRecorder) has(reason string) bool {
	for _, e := range r.all() {
		if strings.Contains(e, " "+reason+" ") {
			return true
		}
	}
	return false
}

func onePod(name string, policy corev1.RestartPolicy, c corev1.Container) *corev1.Pod {
	c.Image, c.ImagePullPolicy = "busybox:1.35", corev1.PullIfNotPresent
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{RestartPolicy: policy, Containers: []corev1.Container{c}}}
}

func phaseIs(phase corev1.PodPhase) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool { return p.Status.Phase == phase }
}

func isRunning(name string) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		cs := kube.ContainerStatus(p.Status.ContainerStatuses, name)
		return cs != nil && cs.State.Running != nil
	}
}

func terminated(p *corev1.Pod, name string) *corev1.ContainerStateTerminated {
	if cs := kube.ContainerStatus(p.Status.ContainerStatuses, name); cs != nil {
		return cs.State.Terminated
	}
	return nil
}

// TestPodLifecycle: create, start and exit; restarts with back-off under
// each restartPolicy; a pod past its deadline.
func TestPodLifecycle(t *testing.T) {
	tests := map[string]struct {
		policy      corev1.RestartPolicy
		exits       []int32
		deadline    int64
		wantPhase   corev1.PodPhase
		wantReason  string // the pod's
		wantCode    int32
		wantRestart int32
		wantStarted int
		wantEvents  []string
	}{
		"succeeds": {policy: corev1.RestartPolicyNever, exits: []int32{0},
			wantPhase: corev1.PodSucceeded, wantStarted: 1, wantEvents: []string{"Scheduled", "Pulled", "Created", "Started"}},
		"fails once, Never": {policy: corev1.RestartPolicyNever, exits: []int32{3},
			wantPhase: corev1.PodFailed, wantCode: 3, wantStarted: 1},
		"restarts with back-off until it succeeds, OnFailure": {policy: corev1.RestartPolicyOnFailure, exits: []int32{1, 2, 0},
			wantPhase: corev1.PodSucceeded, wantRestart: 2, wantStarted: 3, wantEvents: []string{"BackOff"}},
		"Always restarts after success too; the deadline ends it": {policy: corev1.RestartPolicyAlways, exits: []int32{0}, deadline: 1,
			wantPhase: corev1.PodFailed, wantReason: "DeadlineExceeded", wantEvents: []string{"BackOff", "DeadlineExceeded"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := newLifecycle(t, map[string]script{"main": {exits: tc.exits}})
			pod := onePod("p", tc.policy, corev1.Container{Name: "main"})
			if tc.deadline > 0 {
				pod.Spec.ActiveDeadlineSeconds = &tc.deadline
			}
			l.create(pod)
			l.run()
			p := l.waitPod("p", "settled as "+string(tc.wantPhase), phaseIs(tc.wantPhase))
			if p.Status.Reason != tc.wantReason {
				t.Errorf("pod reason %q, want %q", p.Status.Reason, tc.wantReason)
			}
			cs := kube.ContainerStatus(p.Status.ContainerStatuses, "main")
			if tc.deadline == 0 {
				if term := terminated(p, "main"); term == nil || term.ExitCode != tc.wantCode || cs.RestartCount != tc.wantRestart {
					t.Errorf("container status %+v, want exit %d after %d restarts", cs, tc.wantCode, tc.wantRestart)
				}
				if _, started, _ := l.rt.counts("main"); started != tc.wantStarted {
					t.Errorf("started %d times, want %d", started, tc.wantStarted)
				}
			}
			if p.Status.StartTime == nil || p.Status.StartTime.Time.Before(time.Now().Add(9*time.Hour)) {
				t.Errorf("startTime %v does not come from the injected clock", p.Status.StartTime)
			}
			for _, want := range tc.wantEvents {
				if !l.rec.has(want) {
					t.Errorf("no %s event in %q", want, l.rec.all())
				}
			}
		})
	}
}

// TestPodStop: deletion stops the containers with the pod's grace (the
// runtime escalates to SIGKILL when a container ignores SIGTERM), a failing
// liveness probe kills and restarts a container, and the pod is removed
// once stopped.
func TestPodStop(t *testing.T) {
	t.Run("deletion with grace", func(t *testing.T) {
		t.Parallel()
		for _, ignores := range []bool{false, true} {
			l := newLifecycle(t, map[string]script{"main": {runs: true, ignoresTerm: ignores}})
			l.create(onePod("p", corev1.RestartPolicyNever, corev1.Container{Name: "main"}))
			l.run()
			l.waitPod("p", "running", isRunning("main"))
			l.markDeleted("p", 7)
			l.waitGone("p")
			// The grace left of the deletion's 7s, a moment after it.
			if got := l.rt.graces(); len(got) != 1 || got[0] > 7*time.Second || got[0] < 6*time.Second {
				t.Errorf("ignoresTerm %v: stops with grace %v, want one of 7s", ignores, got)
			}
			l.waitRemoved("main")
			if events := strings.Join(l.rec.all(), "\n"); !strings.Contains(events, "spec.containers{main} Normal Killing Stopping container main") {
				t.Errorf("no Killing event in %q", events)
			}
			l.halt()
		}
	})
	t.Run("the daemon's end cuts a long grace short", func(t *testing.T) {
		t.Parallel()
		l := newLifecycle(t, map[string]script{"main": {runs: true, slowStop: true}})
		l.create(onePod("p", corev1.RestartPolicyNever, corev1.Container{Name: "main"}))
		l.run()
		l.waitPod("p", "running", isRunning("main"))
		l.markDeleted("p", 3600)
		deadline := time.Now().Add(10 * time.Second)
		for len(l.rt.graces()) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the container was never stopped")
			}
			time.Sleep(time.Millisecond)
		}
		l.halt() // returns at once, though the stop has an hour to go
		if _, _, left := l.rt.counts("main"); left != 1 {
			t.Fatalf("%d instances after the daemon stopped mid-stop, want the running one", left)
		}
		if _, err := l.store.Get(db.Pods, "default", "p"); err != nil {
			t.Fatalf("the pod after the daemon stopped mid-stop: %v", err)
		}
		// The next run stops it again, with what is left of the grace.
		l.rt.mu.Lock()
		l.rt.scripts["main"] = script{runs: true}
		l.rt.mu.Unlock()
		l.run()
		l.waitGone("p")
		l.waitRemoved("main")
		if got := l.rt.graces(); len(got) != 2 || got[1] > time.Hour || got[1] < 59*time.Minute {
			t.Errorf("stops with grace %v, want the hour twice (less what passed); events %q", got, l.rec.all())
		}
	})
	t.Run("liveness failure restarts", func(t *testing.T) {
		t.Parallel()
		l := newLifecycle(t, map[string]script{"main": {runs: true, probeCode: 1}})
		l.create(onePod("p", corev1.RestartPolicyAlways, corev1.Container{Name: "main",
			LivenessProbe: &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
				ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}}}))
		l.run()
		pod := l.waitPod("p", "restarted", func(p *corev1.Pod) bool {
			cs := kube.ContainerStatus(p.Status.ContainerStatuses, "main")
			return cs != nil && cs.RestartCount >= 1
		})
		cs := kube.ContainerStatus(pod.Status.ContainerStatuses, "main")
		if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 143 {
			t.Errorf("last termination %+v, want the stop's 143", cs.LastTerminationState)
		}
		if got := l.rt.graces(); len(got) == 0 || got[0] > 30*time.Second || got[0] < 29*time.Second {
			t.Errorf("liveness kill graces %v, want the pod's 30s first", got)
		}
		events := strings.Join(l.rec.all(), "\n")
		for _, want := range []string{"spec.containers{main} Warning Unhealthy Liveness probe failed: false: exit 1",
			"spec.containers{main} Normal Killing Container main failed liveness probe, will be restarted"} {
			if !strings.Contains(events, want) {
				t.Errorf("no %q event in %q", want, events)
			}
		}
	})
}

// TestPodRecovery: a restarted Manager takes over what an earlier run
// left — a running instance is adopted (not started again), an exit that
// happened while skiffd was down is recorded with its real code, and an
// instance containerd lost is recorded as unknown — and a restart in the
// middle of a running pod changes nothing.
func TestPodRecovery(t *testing.T) {
	leftRunning, labels := recordedRunning, instanceLabels
	tests := map[string]struct {
		left       func(l *lifecycle, pod *corev1.Pod)
		finish     int32 // the adopted instance's exit, made by the test; -1 = none
		wantCode   int32
		wantReason string
	}{
		"running instance adopted": {
			left: func(l *lifecycle, pod *corev1.Pod) {
				l.rt.add(leftRunning(l, pod), labels(pod), runtime.StateRunning, nil)
			},
			finish: 5, wantCode: 5, wantReason: reasonError,
		},
		"its shim not answering at the restart": {
			left: func(l *lifecycle, pod *corev1.Pod) {
				id := leftRunning(l, pod)
				l.rt.add(id, labels(pod), runtime.StateRunning, nil)
				l.rt.instances[id].unanswered = 3
			},
			finish: 5, wantCode: 5, wantReason: reasonError,
		},
		"exited while skiffd was down": {
			left: func(l *lifecycle, pod *corev1.Pod) {
				l.rt.add(leftRunning(l, pod), labels(pod), runtime.StateExited, &runtime.ExitStatus{Code: 2, ExitedAt: l.clock.Now()})
			},
			finish: -1, wantCode: 2, wantReason: reasonError,
		},
		"lost by containerd": {
			left:   func(l *lifecycle, pod *corev1.Pod) { leftRunning(l, pod) },
			finish: -1, wantCode: 137, wantReason: reasonStatusUnknown,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := newLifecycle(t, map[string]script{"main": {runs: true}})
			pod := onePod("p", corev1.RestartPolicyNever, corev1.Container{Name: "main"})
			pod.Namespace, pod.UID, pod.Spec.NodeName = "default", "uid-p", "node"
			tc.left(l, pod)
			if err := l.store.Create(db.Pods, pod); err != nil {
				t.Fatal(err)
			}
			l.run()
			if tc.finish >= 0 {
				// A restart of skiffd while it runs changes nothing.
				l.restart()
				deadline := time.Now().Add(10 * time.Second)
				for {
					if _, err := l.rt.Wait(context.Background(), InstanceID("uid-p", "main", 0)); err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the adopted instance is gone")
					}
					time.Sleep(time.Millisecond)
				}
				l.rt.exit(t, "main", tc.finish)
			}
			p := l.waitPod("p", "Failed", phaseIs(corev1.PodFailed))
			if term := terminated(p, "main"); term == nil || term.ExitCode != tc.wantCode || term.Reason != tc.wantReason {
				t.Errorf("recorded %+v, want %s with exit %d", terminated(p, "main"), tc.wantReason, tc.wantCode)
			}
			if created, started, _ := l.rt.counts("main"); created != 0 || started != 0 {
				t.Errorf("the container was created %d and started %d times again", created, started)
			}
		})
	}
}

// TestBrokenWatchKeepsTheWorkers: when the Manager's pod watch breaks (it
// fell behind), the pods created meanwhile are run and those deleted
// meanwhile stopped, from the changes it missed alone: no new recovery
// (containerd is listed once), and the pods that were running keep their
// containers.
func TestBrokenWatchKeepsTheWorkers(t *testing.T) {
	l := newLifecycle(t, map[string]script{"main": {runs: true}}, db.WithWatchQueueLimit(2))
	for _, name := range []string{"keep", "gone"} {
		l.create(onePod(name, corev1.RestartPolicyNever, corev1.Container{Name: "main"}))
	}
	l.run()
	for _, name := range []string{"keep", "gone"} {
		l.waitPod(name, "running", isRunning("main"))
	}
	// Four changes in one transaction: more than the watch may queue, so
	// it ends at once.
	if err := l.store.Write(func(tx *db.Tx) error {
		if _, err := tx.Delete(db.Pods, "default", "gone"); err != nil {
			return err
		}
		for _, name := range []string{"new-1", "new-2", "new-3"} {
			pod := onePod(name, corev1.RestartPolicyNever, corev1.Container{Name: "main"})
			pod.Namespace, pod.UID, pod.Spec.NodeName = "default", types.UID("uid-"+name), "node"
			if err := tx.Create(db.Pods, pod); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"new-1", "new-2", "new-3"} {
		l.waitPod(name, "running", isRunning("main"))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, left := l.rt.counts("main"); left == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deleted pod's instance was never removed")
		}
		time.Sleep(time.Millisecond)
	}
	l.rt.mu.Lock()
	lists := l.rt.lists
	l.rt.mu.Unlock()
	if lists != 1 {
		t.Errorf("containerd listed %d times, want once (the recovery at start)", lists)
	}
	if created, started, _ := l.rt.counts("main"); created != 5 || started != 5 {
		t.Errorf("created %d and started %d instances, want 5: one per pod", created, started)
	}
}

// recordedRunning sets pod's status as an earlier run of skiffd left it,
// its container "main" recorded running and ready; it returns the
// instance's ID.
func recordedRunning(l *lifecycle, pod *corev1.Pod) string {
	id := InstanceID(string(pod.UID), "main", 0)
	started := metav1.NewTime(l.clock.Now().Add(-time.Minute))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started, HostIP: "192.0.2.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "main", Image: "busybox:1.35", ContainerID: kube.ContainerID(id),
			Started: ptr(true), Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}}
	return id
}

// instanceLabels are the labels skiffd gives instance 0 of pod's "main".
func instanceLabels(pod *corev1.Pod) map[string]string {
	return map[string]string{runtime.LabelManaged: "true", runtime.LabelPodUID: string(pod.UID), runtime.LabelPodName: pod.Name,
		runtime.LabelPodNamespace: "default", runtime.LabelContainerName: "main", runtime.LabelAttempt: "0"}
}

// TestPodRecoveryReadiness: an adopted container whose readiness probe
// now fails is not left ready, as the kubelet resets readiness on restart.
func TestPodRecoveryReadiness(t *testing.T) {
	l := newLifecycle(t, map[string]script{"main": {runs: true, probeCode: 1}})
	pod := onePod("p", corev1.RestartPolicyNever, corev1.Container{Name: "main",
		ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}}})
	pod.Namespace, pod.UID, pod.Spec.NodeName = "default", "uid-p", "node"
	l.rt.add(recordedRunning(l, pod), instanceLabels(pod), runtime.StateRunning, nil)
	if err := l.store.Create(db.Pods, pod); err != nil {
		t.Fatal(err)
	}
	l.run()
	l.waitPod("p", "not ready", func(p *corev1.Pod) bool {
		cs := kube.ContainerStatus(p.Status.ContainerStatuses, "main")
		return cs != nil && !cs.Ready && cs.State.Running != nil
	})
	if created, started, _ := l.rt.counts("main"); created != 0 || started != 0 {
		t.Errorf("the container was created %d and started %d times again", created, started)
	}
}

// TestRecoveryStartsNoWorkerForFinishedPods: a restarted Manager gives a
// pod an earlier run finished no worker (it would only read the pod again)
// but still removes what the pod left in containerd, and a graceful
// deletion of such a pod still completes.
func TestRecoveryStartsNoWorkerForFinishedPods(t *testing.T) {
	l := newLifecycle(t, map[string]script{"main": {runs: true}})
	pod := onePod("p", corev1.RestartPolicyNever, corev1.Container{Name: "main"})
	pod.Namespace, pod.UID, pod.Spec.NodeName = "default", "uid-p", "node"
	id := recordedRunning(l, pod)
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: reasonCompleted, ContainerID: kube.ContainerID(id)}}
	// the final status was written, the instance's removal cut short
	l.rt.add(id, instanceLabels(pod), runtime.StateExited, &runtime.ExitStatus{Code: 0, ExitedAt: l.clock.Now()})
	if err := l.store.Create(db.Pods, pod); err != nil {
		t.Fatal(err)
	}
	l.run()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, left := l.rt.counts("main"); left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the finished pod's instance was never removed")
		}
		time.Sleep(time.Millisecond)
	}
	// A change to the finished pod starts no worker either.
	obj, err := l.store.Get(db.Pods, "default", "p")
	if err != nil {
		t.Fatal(err)
	}
	obj.SetLabels(map[string]string{"changed": "yes"})
	if err := l.store.Update(db.Pods, obj); err != nil {
		t.Fatal(err)
	}
	// Events come in order: once a pod created after the change runs, the
	// change has been seen.
	l.create(onePod("next", corev1.RestartPolicyNever, corev1.Container{Name: "main"}))
	l.waitPod("next", "running", isRunning("main"))
	l.m.mu.Lock()
	_, hasWorker := l.m.workers["uid-p"]
	workers := len(l.m.workers)
	l.m.mu.Unlock()
	if hasWorker || workers != 1 {
		t.Errorf("%d workers (one for the finished pod: %v), want only the new pod's", workers, hasWorker)
	}
	l.markDeleted("p", 30)
	l.waitGone("p")
	if created, started, _ := l.rt.counts("main"); created != 1 || started != 1 {
		t.Errorf("created %d and started %d instances, want 1: the new pod's", created, started)
	}
}
