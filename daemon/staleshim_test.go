//go:build integration

package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/failpoint"
	"github.com/skiff-sh/skiff/kubelet/podworker"
	"github.com/skiff-sh/skiff/runtime/runtimetest"
)

// TestRestartBesideAStaleShim: a container's next instance starts although
// a shim of its ID that containerd does not know (as a containerd restart
// can leave one) holds its shim socket and is slow to exit once killed.
// The restart happens once, as the container's exit asks, and nothing
// goes wrong on the way: without skiffd waiting for the killed shim's
// socket to close, the new task's create went to the dying shim and
// failed ("ttrpc: closed"), and the pod got a Warning FailedSync event and
// a second try.
func TestRestartBesideAStaleShim(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	// NOTE: the first instance leaves a mark, waits on the FIFO and fails;
	// the second finds the mark and succeeds.
	created, fifo := startGatedPod(t, s, "stale", corev1.RestartPolicyOnFailure,
		"[ -e /gate/ran ] && exit 0; touch /gate/ran; read x < /gate/fifo; exit 1")
	next := podworker.InstanceID(string(created.UID), "main", 1)
	staleExited := runtimetest.StaleShim(t, s.cd.Address, s.namespace(), next)
	if err := os.WriteFile(fifo, []byte("go\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	done := waitPod(t, s.client, "stale", time.Minute, "succeeded", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	cs := done.Status.ContainerStatuses[0]
	if done.Status.Phase != corev1.PodSucceeded || cs.RestartCount != 1 {
		t.Errorf("phase %s, restartCount %d; want Succeeded after 1 restart (status %+v)", done.Status.Phase, cs.RestartCount, cs)
	}
	if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 1 || last.Reason != "Error" {
		t.Errorf("last termination %+v; want the first instance's exit 1 (Error)", cs.LastTerminationState)
	}
	if got := "containerd://" + next; cs.ContainerID != got {
		t.Errorf("containerID %s; want the second instance's, %s", cs.ContainerID, got)
	}
	events, err := s.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=stale"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.Type == corev1.EventTypeWarning {
			t.Errorf("Warning event %s: %s", ev.Reason, ev.Message)
		}
	}
	select {
	case <-staleExited:
	case <-time.After(10 * time.Second):
		t.Error("the stale shim is still there")
	}
}

// TestRestartOverALostTask: skiffd dies right after making a pod's task,
// before asking it to start, and when it comes back containerd cannot read
// that task (its shim answers nothing; in CI's chaos test a containerd
// restart had cut the task's making short, and the pod was recorded
// Failed, exit 255, for an instance that never ran). The instance never
// ran: skiffd makes it again and the pod succeeds, its one container
// started once.
func TestRestartOverALostTask(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.useFailpoint(failpoint.AfterTaskCreate)
	events := recordEvents(t, s.cd, s.namespace())
	s.start()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "lost"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.35", Command: []string{"true"}}},
		},
	}
	created, err := s.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.waitKilledAt(failpoint.AfterTaskCreate, time.Minute)
	id := podworker.InstanceID(string(created.UID), "main", 0)
	thaw := runtimetest.FreezeShim(t, s.cd.Address, s.namespace(), id)
	s.start()
	// NOTE: the removal waits on the frozen shim; thawed, it goes on.
	waitFor(t, time.Minute, "skiffd to find the instance never started", func() (bool, error) {
		p, err := s.client.CoreV1().Pods("default").Get(context.Background(), "lost", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("the pod was recorded Failed: %+v", p.Status.ContainerStatuses)
		}
		b, err := os.ReadFile(filepath.Join(s.dataDir, "skiffd.log"))
		return bytes.Contains(b, []byte("removing an instance that never started")), err
	})
	thaw()
	done := waitPod(t, s.client, "lost", 2*time.Minute, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	cs := done.Status.ContainerStatuses[0]
	if done.Status.Phase != corev1.PodSucceeded || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 || cs.RestartCount != 0 {
		t.Errorf("phase %s, container %+v; want Succeeded, exit 0, no restart", done.Status.Phase, cs)
	}
	if got := events.truth().starts[id]; got != 1 {
		t.Errorf("instance %s started %d times in containerd (%s); want once", id, got, events.history(id))
	}
}

// TestRestartBesideAStuckShim: skiffd restarts while the shim of a running
// container answers nothing (frozen; on a loaded machine, a shim slower
// than containerd's 2 s state timeout), so that containerd reports the
// task's status "unknown". That is no exit: skiffd reads it again until
// the shim answers, and the pod runs on and succeeds, rather than being
// recorded Failed with exit 255. Nor does it hold the node: a pod created
// meanwhile runs to its end while that shim is still frozen (recovery
// used to wait for every container to be read, up to a minute).
func TestRestartBesideAStuckShim(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	created, fifo := startGatedPod(t, s, "stuck", corev1.RestartPolicyNever, "read x < /gate/fifo")
	s.kill()
	thaw := runtimetest.FreezeShim(t, s.cd.Address, s.namespace(), podworker.InstanceID(string(created.UID), "main", 0))
	s.start()
	waitFor(t, time.Minute, "skiffd to find the task unreadable", func() (bool, error) {
		p, err := s.client.CoreV1().Pods("default").Get(context.Background(), "stuck", metav1.GetOptions{})
		if err == nil && p.Status.Phase != corev1.PodRunning {
			return false, fmt.Errorf("the pod is %s: %+v", p.Status.Phase, p.Status.ContainerStatuses)
		}
		b, err := os.ReadFile(filepath.Join(s.dataDir, "skiffd.log"))
		return bytes.Contains(b, []byte("status unknown")), err
	})
	beside := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "beside"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.35", Command: []string{"true"}}},
		},
	}
	if _, err := s.client.CoreV1().Pods("default").Create(context.Background(), beside, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// NOTE: well inside the minute after which a shim that never answers
	// is given up on (runtime's unknownGrace).
	if p := waitPod(t, s.client, "beside", 40*time.Second, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	}); p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("the pod created beside the stuck shim is %s: %+v", p.Status.Phase, p.Status.ContainerStatuses)
	}
	p, err := s.client.CoreV1().Pods("default").Get(context.Background(), "stuck", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Fatalf("the pod whose shim is stuck is %s: %+v; want it still Running", p.Status.Phase, p.Status.ContainerStatuses)
	}
	thaw()
	if err := os.WriteFile(fifo, []byte("go\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	done := waitPod(t, s.client, "stuck", time.Minute, "finished", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if cs := done.Status.ContainerStatuses[0]; done.Status.Phase != corev1.PodSucceeded || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
		t.Errorf("phase %s, container %+v; want Succeeded, exit 0", done.Status.Phase, cs)
	}
}

// startGatedPod creates pod name, whose one container runs script with a
// FIFO at /gate/fifo (returned: a write releases the container's read),
// and waits until the container runs.
func startGatedPod(t *testing.T, s *skiffd, name string, policy corev1.RestartPolicy, script string) (created *corev1.Pod, fifo string) {
	t.Helper()
	gate := t.TempDir()
	fifo = filepath.Join(gate, "fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: policy,
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox:1.35",
				Command:      []string{"sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "gate", MountPath: "/gate"}},
			}},
			Volumes: []corev1.Volume{{Name: "gate", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: gate}}}},
		},
	}
	created, err := s.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.client, name, time.Minute, "running", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	return created, fifo
}
