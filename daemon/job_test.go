//go:build integration

package daemon_test

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestJobRunsToCompletion(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	job, err := s.client.BatchV1().Jobs("default").Create(ctx, shJob("hello", "echo hello from $HOSTNAME", 3, 2, 6, corev1.RestartPolicyNever), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, s.client, "default", job.Name, batchv1.JobComplete, 2*time.Minute)
	if job.Status.Succeeded != 3 || job.Status.Failed != 0 || job.Status.Active != 0 {
		t.Errorf("status counts: succeeded=%d failed=%d active=%d, want 3/0/0", job.Status.Succeeded, job.Status.Failed, job.Status.Active)
	}
	if job.Status.StartTime == nil || job.Status.CompletionTime == nil {
		t.Errorf("startTime %v, completionTime %v: want both set", job.Status.StartTime, job.Status.CompletionTime)
	}
	var types []string
	for _, c := range job.Status.Conditions {
		types = append(types, string(c.Type)+"/"+c.Reason)
	}
	if diff := cmp.Diff([]string{"SuccessCriteriaMet/CompletionsReached", "Complete/CompletionsReached"}, types); diff != "" {
		t.Errorf("conditions (-want,+got):\n%s", diff)
	}

	pods := jobPods(t, s.client, job)
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	for _, p := range pods {
		if !strings.HasPrefix(p.Name, "hello-") || len(p.Name) != len("hello-")+5 {
			t.Errorf("pod name %q, want hello-<5 chars>", p.Name)
		}
		if p.Labels["batch.kubernetes.io/job-name"] != "hello" || p.Labels["job-name"] != "hello" ||
			p.Labels["controller-uid"] != string(job.UID) {
			t.Errorf("pod %s labels %v", p.Name, p.Labels)
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != job.UID || !*p.OwnerReferences[0].Controller {
			t.Errorf("pod %s ownerReferences %+v", p.Name, p.OwnerReferences)
		}
		if p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod %s phase %s", p.Name, p.Status.Phase)
		}
		cs := p.Status.ContainerStatuses
		if len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.Reason != "Completed" ||
			!strings.HasPrefix(cs[0].ContainerID, "containerd://") {
			t.Errorf("pod %s container status %+v", p.Name, cs)
		}
		logs := readLog(t, s, p.Name, &corev1.PodLogOptions{})
		if want := "hello from " + p.Name + "\n"; logs != want {
			t.Errorf("pod %s log %q, want %q", p.Name, logs, want)
		}
	}
}

func TestJobBackoffLimitExceeded(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	job, err := s.client.BatchV1().Jobs("default").Create(ctx, shJob("fails", "echo bad >&2; exit 3", 1, 1, 2, corev1.RestartPolicyNever), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	job = waitJob(t, s.client, "default", job.Name, batchv1.JobFailed, 2*time.Minute)
	if job.Status.Failed != 3 || job.Status.Succeeded != 0 {
		t.Errorf("failed=%d succeeded=%d, want 3/0", job.Status.Failed, job.Status.Succeeded)
	}
	last := job.Status.Conditions[len(job.Status.Conditions)-1]
	if last.Reason != "BackoffLimitExceeded" || last.Message != "Job has reached the specified backoff limit" {
		t.Errorf("Failed condition %+v", last)
	}
	pods := jobPods(t, s.client, job)
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3 (the first try and two retries)", len(pods))
	}
	for _, p := range pods {
		term := p.Status.ContainerStatuses[0].State.Terminated
		if p.Status.Phase != corev1.PodFailed || term == nil || term.ExitCode != 3 || term.Reason != "Error" {
			t.Errorf("pod %s: phase %s terminated %+v", p.Name, p.Status.Phase, term)
		}
	}
}

// TestOnFailureRestartsAndFollow: an OnFailure container restarts in
// place, its restarts count toward backoffLimit, and `logs -f` streams every
// attempt and ends when the container ends for good.
func TestOnFailureRestartsAndFollow(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	job, err := s.client.BatchV1().Jobs("default").Create(ctx, shJob("crashy", "echo attempt; sleep 0.3; exit 1", 1, 1, 2, corev1.RestartPolicyOnFailure), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	waitFor(t, time.Minute, "the pod to run", func() (bool, error) {
		pods := jobPods(t, s.client, job)
		if len(pods) == 0 || len(pods[0].Status.ContainerStatuses) == 0 || pods[0].Status.ContainerStatuses[0].ContainerID == "" {
			return false, nil
		}
		pod = pods[0]
		return true, nil
	})
	stream, err := s.client.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	followed := make(chan int, 1)
	go func() {
		defer stream.Close()
		n := 0
		sc := bufio.NewScanner(stream)
		for sc.Scan() {
			if sc.Text() == "attempt" {
				n++
			}
		}
		followed <- n
	}()
	job = waitJob(t, s.client, "default", job.Name, batchv1.JobFailed, 2*time.Minute)
	if got := job.Status.Conditions[len(job.Status.Conditions)-1].Reason; got != "BackoffLimitExceeded" {
		t.Errorf("Failed reason %q", got)
	}
	select {
	case n := <-followed:
		if n < 3 {
			t.Errorf("follow saw %d attempts, want at least 3 (backoffLimit 2 allows two restarts)", n)
		}
	case <-time.After(time.Minute):
		t.Fatal("logs -f did not end after the container ended for good")
	}
}

func TestDeletePropagation(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	jobs := s.client.BatchV1().Jobs("default")

	// Background (what kubectl sends): the pods go too.
	bg, err := jobs.Create(ctx, shJob("bg", "sleep 300", 2, 2, 0, corev1.RestartPolicyNever), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, s, bg, 2)
	if err := jobs.Delete(ctx, bg.Name, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the job's pods to be gone", func() (bool, error) {
		return len(jobPods(t, s.client, bg)) == 0, nil
	})
	if _, err := jobs.Get(ctx, bg.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("job after delete: %v, want NotFound", err)
	}

	// No options: orphaned, as kube-apiserver does for batch/v1 Jobs.
	orphan, err := jobs.Create(ctx, shJob("orphan", "sleep 300", 1, 1, 0, corev1.RestartPolicyNever), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, s, orphan, 1)
	if err := jobs.Delete(ctx, orphan.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := jobPods(t, s.client, orphan)
	if len(pods) != 1 || len(pods[0].OwnerReferences) != 0 || pods[0].DeletionTimestamp != nil {
		t.Fatalf("orphaned pods %+v: want one pod without ownerReferences, not deleted", pods)
	}
	// Deleting the pod stops its container (SIGTERM; sleep dies of it).
	if err := s.client.CoreV1().Pods("default").Delete(ctx, pods[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the orphaned pod to be gone", func() (bool, error) {
		_, err := s.client.CoreV1().Pods("default").Get(ctx, pods[0].Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

func waitRunning(t *testing.T, s *skiffd, job *batchv1.Job, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	waitFor(t, time.Minute, "pods running", func() (bool, error) {
		pods = jobPods(t, s.client, job)
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n, nil
	})
	return pods
}

func readLog(t *testing.T, s *skiffd, pod string, opts *corev1.PodLogOptions) string {
	t.Helper()
	rc, err := s.client.CoreV1().Pods("default").GetLogs(pod, opts).Stream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, rc)
}
