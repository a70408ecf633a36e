package podworker

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiff-sh/skiff/kube"
)

func postStartPod(policy corev1.RestartPolicy) *corev1.Pod {
	return onePod("p", policy, corev1.Container{Name: "main", Lifecycle: &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hook"}}}}})
}

// TestPostStart: the container shows Running only once its postStart hook
// is done; a failed hook kills it with the kubelet's events, and the
// restart policy decides what follows.
func TestPostStart(t *testing.T) {
	t.Run("running only after the hook", func(t *testing.T) {
		t.Parallel()
		gate := make(chan struct{})
		l := newLifecycle(t, map[string]script{"main": {runs: true, execGate: gate}})
		l.create(postStartPod(corev1.RestartPolicyAlways))
		l.run()
		deadline := time.Now().Add(10 * time.Second)
		for {
			l.rt.mu.Lock()
			execs := l.rt.execs
			l.rt.mu.Unlock()
			if execs == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the hook never ran; events %q", l.rec.all())
			}
			time.Sleep(time.Millisecond)
		}
		if !l.rec.has("Started") {
			t.Errorf("no Started event before the hook ran: %q", l.rec.all())
		}
		p := l.waitPod("p", "read", func(*corev1.Pod) bool { return true })
		if cs := kube.ContainerStatus(p.Status.ContainerStatuses, "main"); cs != nil && (cs.State.Running != nil || cs.Ready) {
			t.Errorf("while the hook runs the container shows %+v, want it not running yet", cs)
		}
		close(gate)
		p = l.waitPod("p", "running", isRunning("main"))
		if cs := kube.ContainerStatus(p.Status.ContainerStatuses, "main"); !cs.Ready || cs.RestartCount != 0 {
			t.Errorf("after the hook: %+v, want ready, never restarted", cs)
		}
		if l.rec.has(reasonFailedPostStartHook) {
			t.Errorf("FailedPostStartHook after a hook that passed: %q", l.rec.all())
		}
	})
	t.Run("a failed hook kills the container, Never", func(t *testing.T) {
		t.Parallel()
		l := newLifecycle(t, map[string]script{"main": {runs: true, probeCode: 1}})
		pod := postStartPod(corev1.RestartPolicyNever)
		grace := int64(5)
		pod.Spec.TerminationGracePeriodSeconds = &grace
		l.create(pod)
		l.run()
		p := l.waitPod("p", "failed", phaseIs(corev1.PodFailed))
		term := terminated(p, "main")
		if term == nil || term.ExitCode != 143 || term.StartedAt.IsZero() {
			t.Errorf("terminated %+v, want the kill's 143 with its start time", term)
		}
		if got := l.rt.graces(); len(got) != 1 || got[0] > 5*time.Second || got[0] < 4*time.Second {
			t.Errorf("killed with graces %v, want the pod's 5s", got)
		}
		events := strings.Join(l.rec.all(), "\n")
		for _, want := range []string{"spec.containers{main} Warning FailedPostStartHook PostStartHook failed",
			"spec.containers{main} Normal Killing FailedPostStartHook"} {
			if !strings.Contains(events, want) {
				t.Errorf("no %q event in %q", want, events)
			}
		}
	})
	t.Run("a failed hook restarts the container, Always", func(t *testing.T) {
		t.Parallel()
		l := newLifecycle(t, map[string]script{"main": {runs: true, probeCode: 1}})
		l.create(postStartPod(corev1.RestartPolicyAlways))
		l.run()
		p := l.waitPod("p", "restarted twice", func(p *corev1.Pod) bool {
			cs := kube.ContainerStatus(p.Status.ContainerStatuses, "main")
			return cs != nil && cs.RestartCount >= 2
		})
		cs := kube.ContainerStatus(p.Status.ContainerStatuses, "main")
		if cs.State.Running != nil || cs.Ready {
			t.Errorf("a container whose hook always fails shows %+v", cs)
		}
		if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 143 {
			t.Errorf("last termination %+v, want the kill's 143", cs.LastTerminationState)
		}
	})
}

// TestPostStartMessage: until the restart after a failed hook is done,
// the container waits with PostStartHookError and the hook's message (with
// its output) as the kubelet's handler runner words it.
func TestPostStartMessage(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	defer close(gate)
	l := newLifecycle(t, map[string]script{"main": {runs: true, probeCode: 2, execGate: gate, gateAfter: 1}})
	l.create(postStartPod(corev1.RestartPolicyAlways))
	l.run()
	p := l.waitPod("p", "waiting after its hook failed", func(p *corev1.Pod) bool {
		cs := kube.ContainerStatus(p.Status.ContainerStatuses, "main")
		return cs != nil && cs.LastTerminationState.Terminated != nil && cs.State.Waiting != nil
	})
	cs := kube.ContainerStatus(p.Status.ContainerStatuses, "main")
	if cs.State.Waiting.Reason != reasonPostStartHookError {
		t.Errorf("waiting reason %q, want %q", cs.State.Waiting.Reason, reasonPostStartHookError)
	}
	got := cs.State.Waiting.Message
	want := `Exec lifecycle hook ([hook]) for Container "main" in Pod "p_default(uid-p)" failed - error: command 'hook' exited with 2: hook: exit 2, message: "hook: exit 2"`
	if got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
}

// TestPostStartHTTP: an HTTP hook passes whatever status answers it, and
// fails when nothing answers.
func TestPostStartHTTP(t *testing.T) {
	t.Parallel()
	hits := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits <- r.UserAgent() + " " + r.URL.Path
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	for name, port := range map[string]int{"answered": srv.Listener.Addr().(*net.TCPAddr).Port, "refused": closedPort} {
		l := newLifecycle(t, map[string]script{"main": {runs: true}})
		pod := onePod("p", corev1.RestartPolicyNever, corev1.Container{Name: "main", Lifecycle: &corev1.Lifecycle{
			PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "127.0.0.1", Path: "/hook", Port: intstr.FromInt(port)}}}})
		l.create(pod)
		l.run()
		if name == "answered" {
			l.waitPod("p", "running", isRunning("main"))
			if l.rec.has(reasonFailedPostStartHook) {
				t.Errorf("answered: FailedPostStartHook in %q", l.rec.all())
			}
			if n := len(hits); n != 1 || <-hits != "kube-lifecycle/1.34 /hook" {
				t.Errorf("answered: the hook's server saw %d requests, want one GET /hook from kube-lifecycle/1.34", n)
			}
		} else {
			l.waitPod("p", "failed", phaseIs(corev1.PodFailed))
			if !l.rec.has(reasonFailedPostStartHook) {
				t.Errorf("refused: no FailedPostStartHook in %q", l.rec.all())
			}
		}
		l.halt()
	}
}

// TestPreStopFails: a failed preStop hook gets the kubelet's Warning event
// (without its output) and the container is stopped all the same.
func TestPreStopFails(t *testing.T) {
	t.Parallel()
	l := newLifecycle(t, map[string]script{"main": {runs: true, probeCode: 1}})
	l.create(onePod("p", corev1.RestartPolicyNever, corev1.Container{Name: "main", Lifecycle: &corev1.Lifecycle{
		PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"hook"}}}}}))
	l.run()
	l.waitPod("p", "running", isRunning("main"))
	l.markDeleted("p", 5)
	l.waitGone("p")
	if events := strings.Join(l.rec.all(), "\n"); !strings.Contains(events, "spec.containers{main} Warning FailedPreStopHook PreStopHook failed") {
		t.Errorf("no FailedPreStopHook event in %q", events)
	}
}
