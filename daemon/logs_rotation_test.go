//go:build integration

package daemon_test

import (
	"context"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestContainerLogRotation runs a Job whose output is many times
// --container-log-max-size: the pod keeps --container-log-max-files files
// and /log serves the newest lines in order, whole.
func TestContainerLogRotation(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--container-log-max-size=64Ki", "--container-log-max-files=3")
	s.start()
	ctx := context.Background()
	const lines = 50000 // some 2 MiB of log entries
	job, err := s.client.BatchV1().Jobs("default").Create(ctx,
		shJob("chatty", "seq 1 "+strconv.Itoa(lines), 1, 1, 0, corev1.RestartPolicyNever), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The log is read as soon as the container is seen terminated: its
	// driver may still be writing then, and the read must wait for it.
	var pod corev1.Pod
	waitFor(t, 2*time.Minute, "the container to terminate", func() (bool, error) {
		pods, err := s.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
		if err != nil || len(pods.Items) == 0 {
			return false, err
		}
		pod = pods.Items[0]
		cs := pod.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Terminated != nil, nil
	})

	podLog := func(opts *corev1.PodLogOptions) []string {
		t.Helper()
		rc, err := s.client.CoreV1().Pods("default").GetLogs(pod.Name, opts).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		text, ok := strings.CutSuffix(string(b), "\n")
		if !ok {
			t.Fatalf("log does not end with a newline: %.100q", b)
		}
		return strings.Split(text, "\n")
	}
	got := podLog(&corev1.PodLogOptions{})
	if len(got) < 2000 || len(got) > lines/2 {
		t.Errorf("%d lines kept out of %d, want those of 3 files of 64Ki", len(got), lines)
	}
	for i, line := range got {
		if want := strconv.Itoa(lines - len(got) + 1 + i); line != want {
			t.Fatalf("line %d of the log is %q, want %q", i, line, want)
		}
	}
	if tail := podLog(&corev1.PodLogOptions{TailLines: ptr(int64(2))}); strings.Join(tail, ",") != "49999,50000" {
		t.Errorf("tail 2 = %q", tail)
	}
	waitJob(t, s.client, "default", job.Name, batchv1.JobComplete, time.Minute)
	files, err := filepath.Glob(filepath.Join(s.dataDir, "logs", "default_"+pod.Name+"_"+string(pod.UID), "main", "0.log*"))
	if err != nil || len(files) != 3 {
		t.Errorf("log files %q (%v), want 0.log and two rotated ones", files, err)
	}
}

// TestFallbackMessageIsTheLogsEnd: a container that fails after much
// output, with FallbackToLogsOnError, gets the end of its whole log as its
// termination message, though its exit is recorded before its log driver
// has written the last lines.
func TestFallbackMessageIsTheLogsEnd(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--container-log-max-size=64Ki", "--container-log-max-files=3")
	s.start()
	ctx := context.Background()
	job := shJob("fails-loudly", "seq 1 50000; exit 3", 1, 1, 0, corev1.RestartPolicyNever)
	job.Spec.Template.Spec.Containers[0].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	job, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitJob(t, s.client, "default", job.Name, batchv1.JobFailed, 2*time.Minute)
	cs := jobPods(t, s.client, job)[0].Status.ContainerStatuses
	if len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 3 {
		t.Fatalf("container statuses %+v, want one terminated with code 3", cs)
	}
	msg := cs[0].State.Terminated.Message
	if lines := strings.Split(strings.TrimSuffix(msg, "\n"), "\n"); len(msg) > 2048 || lines[len(lines)-1] != "50000" {
		t.Errorf("termination message of %d bytes ends %q, want at most 2048 ending with the log's last line 50000", len(msg), lines[len(lines)-1])
	}
}

// TestAttachShowsPrompt attaches to a shell: its prompt, which ends without
// a newline, shows at once.
func TestAttachShowsPrompt(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	kubectl := newStreamKubectl(t, "kubectl", s)
	pod := runningJobPod(t, s, "prompter", corev1.Container{
		Command: []string{"sh"}, Stdin: true, TTY: true,
		Env: []corev1.EnvVar{{Name: "PS1", Value: "skiff-prompt> "}},
	})
	term := kubectl.onTerminal("attach", "-it", pod.Name)
	term.expect("If you don't see a command prompt")
	term.typeIn("\r")
	term.expect("skiff-prompt> ")
	term.typeIn("echo hello-$((2+3))\r")
	term.expect("hello-5\r\nskiff-prompt> ")
	term.typeIn("exit\r")
	term.exit()
}
