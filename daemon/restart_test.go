//go:build integration

package daemon_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	containerdclient "github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKill9LosesNothing kills skiffd with SIGKILL while pods run: running
// containers are re-adopted, containers that ended meanwhile are accounted
// with their real exit codes, no pod is created twice and nothing is
// counted twice.
func TestKill9LosesNothing(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	jobs := s.client.BatchV1().Jobs("default")
	create := func(j *batchv1.Job) *batchv1.Job {
		t.Helper()
		created, err := jobs.Create(ctx, j, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return created
	}
	steady := create(shJob("steady", "sleep 1; exit 0", 4, 2, 0, corev1.RestartPolicyNever))
	doomed := create(shJob("doomed", "sleep 1; exit 7", 1, 1, 0, corev1.RestartPolicyNever))
	// long runs until the test signals it, so it is surely running across the restart.
	long := create(shJob("long", "trap 'exit 0' USR1; while true; do sleep 0.05; done", 1, 1, 0, corev1.RestartPolicyNever))

	waitRunning(t, s, steady, 2)
	waitRunning(t, s, doomed, 1)
	longPod := waitRunning(t, s, long, 1)[0]
	longID := longPod.Status.ContainerStatuses[0].ContainerID

	s.kill()

	// Wait, through containerd itself, until the short containers have ended
	// while skiffd was down.
	cd, err := containerdclient.New(containerd.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer cd.Close()
	nsCtx := namespaces.WithNamespace(ctx, "skiff-"+strings.ToLower(t.Name()))
	waitFor(t, time.Minute, "the short containers to exit while skiffd is down", func() (bool, error) {
		containers, err := cd.Containers(nsCtx)
		if err != nil {
			return false, err
		}
		stopped := 0
		for _, c := range containers {
			task, err := c.Task(nsCtx, nil)
			if err != nil {
				continue
			}
			st, err := task.Status(nsCtx)
			if err == nil && st.Status == containerdclient.Stopped {
				stopped++
			}
		}
		return stopped >= 3, nil
	})

	s.start()
	// The long container was adopted, not restarted: same instance, still running.
	waitFor(t, time.Minute, "the long pod to be seen running again", func() (bool, error) {
		p, err := s.client.CoreV1().Pods("default").Get(ctx, longPod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.State.Running != nil && cs.ContainerID == longID && cs.RestartCount == 0, nil
	})
	container, err := cd.LoadContainer(nsCtx, strings.TrimPrefix(longID, "containerd://"))
	if err != nil {
		t.Fatal(err)
	}
	task, err := container.Task(nsCtx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Kill(nsCtx, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}

	checkJob := func(job *batchv1.Job, cond batchv1.JobConditionType, succeeded, failed int32, exitCode int32) {
		t.Helper()
		got := waitJob(t, s.client, "default", job.Name, cond, 2*time.Minute)
		if got.Status.Succeeded != succeeded || got.Status.Failed != failed {
			t.Errorf("job %s: succeeded=%d failed=%d, want %d/%d", job.Name, got.Status.Succeeded, got.Status.Failed, succeeded, failed)
		}
		pods := jobPods(t, s.client, got)
		if len(pods) != int(succeeded+failed) {
			t.Errorf("job %s has %d pods, want %d: a pod was created twice or lost", job.Name, len(pods), succeeded+failed)
		}
		for _, p := range pods {
			cs := p.Status.ContainerStatuses[0]
			if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != exitCode || cs.RestartCount != 0 {
				t.Errorf("pod %s: %+v, want terminated with exit code %d, no restart", p.Name, cs, exitCode)
			}
			if len(p.Finalizers) != 0 {
				t.Errorf("pod %s still has finalizers %v after being counted", p.Name, p.Finalizers)
			}
		}
	}
	checkJob(steady, batchv1.JobComplete, 4, 0, 0)
	checkJob(doomed, batchv1.JobFailed, 0, 1, 7)
	checkJob(long, batchv1.JobComplete, 1, 0, 0)
	if p, err := s.client.CoreV1().Pods("default").Get(ctx, longPod.Name, metav1.GetOptions{}); err != nil || p.Status.ContainerStatuses[0].ContainerID != longID {
		t.Errorf("long pod after completion: %v %v, want the same container %s", p, err, longID)
	}
}
