//go:build integration

package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	containerdclient "github.com/containerd/containerd"
	apievents "github.com/containerd/containerd/api/events"
	"github.com/containerd/containerd/api/services/tasks/v1"
	"github.com/containerd/containerd/events"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/containerd/snapshots"
	"github.com/containerd/typeurl/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// The ground truth of what ran is containerd's own event stream, read by
// the test from outside skiffd; these helpers record it, compare it with
// what skiffd recorded, and look for anything left behind.

// failpointBin builds skiffd with the failpoints tag, once per test binary.
var failpointBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(skiffdBin), "skiffd-failpoints")
	build := exec.Command("go", "build", "-tags", "failpoints,"+skiffdTags, "-o", bin, "../cmd/skiffd")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building skiffd with failpoints: %v\n%s", err, out)
	}
	return bin, nil
})

// useFailpoint makes s a failpoints build of skiffd that kills itself at
// point ("<point>" or "<point>:<n>") when it next starts.
func (s *skiffd) useFailpoint(point string) {
	s.t.Helper()
	bin, err := failpointBin()
	if err != nil {
		s.t.Fatal(err)
	}
	s.bin = bin
	s.env = []string{"SKIFF_FAILPOINT=" + point}
}

// waitKilledAt waits until skiffd has killed itself at its failpoint.
func (s *skiffd) waitKilledAt(point string, timeout time.Duration) {
	s.t.Helper()
	select {
	case <-s.exited:
	case <-time.After(timeout):
		s.t.Fatalf("skiffd did not reach failpoint %s within %s", point, timeout)
	}
	b, _ := os.ReadFile(filepath.Join(s.dataDir, "skiffd.log"))
	name, _, _ := strings.Cut(point, ":")
	if !bytes.Contains(b, []byte("failpoint "+name+": killing skiffd")) {
		s.t.Fatalf("skiffd exited, but not at failpoint %s:\n%s", point, tail(string(b), 40))
	}
	s.env = nil
}

// taskEvent is one event of containerd about a container's task.
type taskEvent struct {
	topic string
	id    string    // container ID
	code  uint32    // exit status, for /tasks/exit and /tasks/delete
	at    time.Time // when it was published
}

// eventLog records containerd's events of one namespace, subscribing again
// when the stream breaks (containerd restarted).
type eventLog struct {
	mu     sync.Mutex
	events []taskEvent
}

// recordEvents starts recording the events of namespace ns of env until
// the test ends.
func recordEvents(t testing.TB, env *runtimetest.Env, ns string) *eventLog {
	t.Helper()
	ctx, cancel := context.WithCancel(namespaces.WithNamespace(context.Background(), ns))
	log := &eventLog{}
	subscribed := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		first := true
		for ctx.Err() == nil {
			// NOTE: a client of its own each time: a connection that saw
			// containerd go away redials only after its back-off, and what
			// containerd publishes meanwhile would be missed.
			client, err := containerdclient.New(env.Address, containerdclient.WithTimeout(time.Second))
			if err == nil {
				envC, errC := client.Subscribe(ctx, fmt.Sprintf("namespace==%q", ns))
				if first {
					close(subscribed)
					first = false
				}
				log.consume(envC, errC)
				client.Close()
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	<-subscribed
	// NOTE: a subscription is live once the server accepted it; give it a
	// moment before anything happens in the namespace.
	time.Sleep(100 * time.Millisecond)
	t.Cleanup(func() { cancel(); <-done })
	return log
}

func (l *eventLog) consume(envC <-chan *events.Envelope, errC <-chan error) {
	for {
		select {
		case <-errC:
			return
		case env, ok := <-envC:
			if !ok {
				return
			}
			ev, err := typeurl.UnmarshalAny(env.Event)
			if err != nil {
				continue
			}
			var te taskEvent
			switch e := ev.(type) {
			case *apievents.TaskCreate:
				te = taskEvent{topic: env.Topic, id: e.ContainerID}
			case *apievents.TaskStart:
				te = taskEvent{topic: env.Topic, id: e.ContainerID}
			case *apievents.TaskExit:
				if e.ID != e.ContainerID {
					continue // an exec's exit
				}
				te = taskEvent{topic: env.Topic, id: e.ContainerID, code: e.ExitStatus}
			case *apievents.TaskDelete:
				te = taskEvent{topic: env.Topic, id: e.ContainerID, code: e.ExitStatus}
			case *apievents.ContainerCreate:
				te = taskEvent{topic: env.Topic, id: e.ID}
			case *apievents.ContainerDelete:
				te = taskEvent{topic: env.Topic, id: e.ID}
			default:
				continue
			}
			te.at = env.Timestamp
			l.mu.Lock()
			l.events = append(l.events, te)
			l.mu.Unlock()
		}
	}
}

// ordered is the events in the order they were published.
//
// NOTE: a shim queues the events containerd could not take while it
// restarted and publishes them again later, with their first timestamps:
// received order is not publication order.
func (l *eventLog) ordered() []taskEvent {
	l.mu.Lock()
	events := slices.Clone(l.events)
	l.mu.Unlock()
	sort.SliceStable(events, func(i, j int) bool { return events[i].at.Before(events[j].at) })
	return events
}

// history is the events of container id, in order.
func (l *eventLog) history(id string) string {
	var out []string
	for _, e := range l.ordered() {
		if e.id == id {
			out = append(out, e.topic)
			if e.topic == "/tasks/exit" {
				out[len(out)-1] += fmt.Sprintf("(%d)", e.code)
			}
		}
	}
	return strings.Join(out, " ")
}

// truth is what containerd says ran, by container ID (an ID is made again
// when its instance never started).
type truth struct {
	starts map[string]int // task starts
	exit   map[string]int // the exit of the ID's last task; absent while unknown
}

func (l *eventLog) truth() truth {
	tr := truth{starts: map[string]int{}, exit: map[string]int{}}
	closed := map[string]bool{} // the ID's last task was deleted
	for _, e := range l.ordered() {
		_, exited := tr.exit[e.id]
		switch e.topic {
		case "/tasks/create":
			closed[e.id] = false
			delete(tr.exit, e.id)
		case "/tasks/start":
			tr.starts[e.id]++
			if closed[e.id] { // its /tasks/create was lost while containerd restarted
				closed[e.id] = false
				delete(tr.exit, e.id)
			}
		case "/tasks/exit":
			if !closed[e.id] && !exited {
				tr.exit[e.id] = int(e.code)
			}
		case "/tasks/delete":
			// NOTE: the exit of a task that ended while containerd was
			// down may never be published; its deletion, which containerd
			// publishes itself, carries the same status. What containerd
			// publishes after the deletion (exit 255 when a shim that
			// outlived its task goes away) is no run.
			if !closed[e.id] && !exited {
				tr.exit[e.id] = int(e.code)
			}
			closed[e.id] = true
		}
	}
	return tr
}

// outcome is what a Job's pods really did.
type outcome struct{ succeeded, failed int }

// checkJob compares what skiffd recorded of a Job with what really ran:
// no container ran twice, every pod recorded its instance's real exit
// code, every run belongs to a pod, and the Job's counters are what ran.
// What ran is containerd's event stream, plus, when markers is not nil,
// the runs the containers themselves noted (runMarkers: a shim's start
// event is lost when it falls while containerd restarts). It returns the
// real outcome.
func checkJob(t testing.TB, l *eventLog, job *batchv1.Job, pods []corev1.Pod, markers map[string]runMarker) outcome {
	t.Helper()
	tr := l.truth()
	var out outcome
	accounted := map[string]bool{}
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			term := cs.State.Terminated
			if term == nil {
				t.Errorf("pod %s container %s is not terminated: %+v", p.Name, cs.Name, cs.State)
				continue
			}
			id := strings.TrimPrefix(cs.ContainerID, "containerd://")
			accounted[id] = true
			mark := markers[p.Name]
			starts := max(tr.starts[id], mark.runs)
			if starts > 1 {
				t.Errorf("pod %s: container %s ran %d times (%d runs noted): %s", p.Name, id, starts, mark.runs, l.history(id))
			}
			code, known := tr.exit[id]
			if mark.exited {
				code, known = mark.exit, true
			}
			switch {
			case starts == 0 && term.Reason == "StartError":
				// NOTE: none of the test containers can fail to start by
				// itself: a StartError is a failure charged for skiffd's or
				// containerd's trouble.
				t.Errorf("pod %s recorded StartError for container %s, which never ran: %s", p.Name, id, term.Message)
				out.failed++
				continue
			case starts == 0:
				t.Errorf("pod %s recorded %s (exit %d, %s) for container %s, which never ran: %s",
					p.Name, p.Status.Phase, term.ExitCode, term.Reason, id, l.history(id))
				continue
			case !known:
				t.Errorf("pod %s: containerd reported no exit for container %s: %s", p.Name, id, l.history(id))
			case int(term.ExitCode) != code:
				t.Errorf("pod %s recorded exit %d (%s) for container %s; containerd says it exited %d: %s",
					p.Name, term.ExitCode, term.Reason, id, code, l.history(id))
			}
			if known && code == 0 {
				out.succeeded++
			} else {
				out.failed++
			}
		}
	}
	for id, n := range tr.starts {
		if n > 0 && !accounted[id] {
			t.Errorf("container %s ran but no pod of job %s records it: %s", id, job.Name, l.history(id))
		}
	}
	if job.Status.Succeeded != int32(out.succeeded) || job.Status.Failed != int32(out.failed) {
		t.Errorf("job %s counts succeeded=%d failed=%d; what ran: %d successes and %d failures",
			job.Name, job.Status.Succeeded, job.Status.Failed, out.succeeded, out.failed)
	}
	return out
}

// withRunMarkers makes each run of the Job's container note itself in
// dir/<pod name> (a hostPath), first thing, and its exit code last thing,
// for runMarkers.
func withRunMarkers(job *batchv1.Job, dir string) *batchv1.Job {
	spec := &job.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "runs", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: dir},
	}})
	c := &spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "runs", MountPath: "/runs"})
	c.Env = append(c.Env, corev1.EnvVar{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
	}})
	c.Command[len(c.Command)-1] = `echo run >> "/runs/$POD_NAME"; (` + c.Command[len(c.Command)-1] +
		`); code=$?; echo "exit $code" >> "/runs/$POD_NAME"; exit $code`
	return job
}

// runMarker is what a pod's container noted of its runs.
type runMarker struct {
	runs   int
	exit   int  // the exit code its last run noted
	exited bool // one was noted
}

// runMarkers reads what each pod's container noted in dir.
func runMarkers(t testing.TB, dir string) map[string]runMarker {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	marks := map[string]runMarker{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var m runMarker
		for _, line := range strings.Split(string(b), "\n") {
			if line == "run" {
				m.runs++
			}
			if code, ok := strings.CutPrefix(line, "exit "); ok {
				m.exit, _ = strconv.Atoi(code)
				m.exited = true
			}
		}
		marks[e.Name()] = m
	}
	return marks
}

// deleteJobs deletes every Job and waits until no pod is left.
func (s *skiffd) deleteJobs(timeout time.Duration) {
	s.t.Helper()
	ctx := context.Background()
	bg := metav1.DeletePropagationBackground
	jobs, err := s.client.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	for _, j := range jobs.Items {
		if err := s.client.BatchV1().Jobs(j.Namespace).Delete(ctx, j.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
			s.t.Fatal(err)
		}
	}
	waitFor(s.t, timeout, "the jobs' pods to be gone", func() (bool, error) {
		pods, err := s.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
}

// leftovers lists what is left of skiffd's pods in containerd and on disk:
// containers, tasks, container snapshots, create leases, shim bundles, runc
// state, shim and log driver processes, network namespaces, log and volume
// directories.
func (s *skiffd) leftovers() []string {
	ctx := namespaces.WithNamespace(context.Background(), s.namespace())
	var left []string
	add := func(format string, args ...any) { left = append(left, fmt.Sprintf(format, args...)) }
	client, err := containerdclient.New(s.cd.Address)
	if err != nil {
		return []string{err.Error()}
	}
	defer client.Close()
	if cs, err := client.Containers(ctx); err != nil {
		add("listing containers: %v", err)
	} else {
		for _, c := range cs {
			add("container %s", c.ID())
		}
	}
	if ts, err := client.TaskService().List(ctx, &tasks.ListTasksRequest{}); err != nil {
		add("listing tasks: %v", err)
	} else {
		for _, task := range ts.Tasks {
			add("task %s", task.ID)
		}
	}
	err = client.SnapshotService(containerdclient.DefaultSnapshotter).Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive && !strings.HasPrefix(info.Name, "extract-") {
			add("snapshot %s", info.Name)
		}
		return nil
	})
	if err != nil {
		add("listing snapshots: %v", err)
	}
	if ls, err := client.LeasesService().List(ctx); err != nil {
		add("listing leases: %v", err)
	} else {
		for _, l := range ls {
			if strings.HasPrefix(l.ID, "skiff-create-") {
				add("lease %s", l.ID)
			}
		}
	}
	// NOTE: the pod networks skiffd keeps made ahead (--pod-network-pool)
	// are no pod's; one a pod took is the pod's (the pool's record of it
	// is gone).
	pooled := pooledSandboxes(s.dataDir)
	for _, dir := range []string{
		filepath.Join(s.cd.State, "io.containerd.runtime.v2.task", s.namespace()),
		filepath.Join("/run/containerd/runc", s.namespace()),
		filepath.Join(s.dataDir, "network", "netns"),
		filepath.Join(s.dataDir, "network", "pods"),
		filepath.Join(s.dataDir, "logs"),
		filepath.Join(s.dataDir, "volumes"),
	} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !pooled[e.Name()] {
				add("%s/%s", dir, e.Name())
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		netns := filepath.Join(s.dataDir, "network", "netns") + "/"
		for sc.Scan() {
			_, rest, found := strings.Cut(sc.Text(), netns)
			if id, _, _ := strings.Cut(rest, "/"); found && !pooled[id] {
				add("mount %s", sc.Text())
			}
		}
	}
	left = append(left, processesOf(s.namespace(), s.cd.Address)...)
	sort.Strings(left)
	return left
}

// pooledSandboxes are the IDs of the pod networks skiffd's pool holds
// (made ahead, no pod's yet): those with a record under network/pods/.
func pooledSandboxes(dataDir string) map[string]bool {
	records, _ := filepath.Glob(filepath.Join(dataDir, "network", "pods", "pool-*", "sandbox.json"))
	ids := map[string]bool{}
	for _, r := range records {
		ids[filepath.Base(filepath.Dir(r))] = true
	}
	return ids
}

// processesOf lists the shims and log drivers of namespace ns.
func processesOf(ns, address string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") &&
			strings.Contains(string(cmdline), "\x00-namespace\x00"+ns+"\x00") &&
			strings.Contains(string(cmdline), "\x00-address\x00"+address) {
			found = append(found, fmt.Sprintf("shim pid %s: %s", e.Name(), strings.Join(args, " ")))
			continue
		}
		if len(args) > 1 && args[1] == "log-driver" {
			environ, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if bytes.Contains(environ, []byte("CONTAINER_NAMESPACE="+ns+"\x00")) {
				found = append(found, fmt.Sprintf("log driver pid %s: %s", e.Name(), strings.Join(args, " ")))
			}
		}
	}
	return found
}

// assertNothingLeft waits until nothing of skiffd's pods is left (the
// sweep runs periodically), and fails naming what is.
func (s *skiffd) assertNothingLeft(timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := s.leftovers()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Errorf("left behind after %s:\n  %s", timeout, strings.Join(left, "\n  "))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
