//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestPostStartHook: a container's postStart hook runs in it after it
// starts: the main process waits for the file the hook writes.
func TestPostStartHook(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pod := shPod("hooked", corev1.RestartPolicyNever,
		"for i in $(seq 300); do if test -f /tmp/hooked; then cat /tmp/hooked; exit 0; fi; sleep 0.1; done; exit 1")
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo written-by-poststart > /tmp/hooked"}}}}
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, s.client, "hooked", time.Minute, "finished", isFinished)
	if got.Status.Phase != corev1.PodSucceeded {
		t.Errorf("phase %s (%+v), want Succeeded: the main container saw the hook's file", got.Status.Phase, statusOf(got, "c0").State)
	}
	logs, err := s.client.CoreV1().Pods("default").GetLogs("hooked", &corev1.PodLogOptions{Container: "c0"}).DoRaw(ctx)
	if err != nil || string(logs) != "written-by-poststart\n" {
		t.Errorf("logs %q %v, want the hook's file", logs, err)
	}
}

// TestPostStartHookFails: a failing postStart hook kills the container
// with the kubelet's events; it waits with PostStartHookError and the
// hook's output, then restarts (restartPolicy Always).
func TestPostStartHookFails(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=failhook"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pod := shPod("failhook", corev1.RestartPolicyAlways, "exec sleep 3600")
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo boom; exit 3"}}}}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`Exec lifecycle hook ([sh -c echo boom; exit 3]) for Container "c0" in Pod "failhook_default(%s)" failed - error: command 'sh -c echo boom; exit 3' exited with 3: , message: "boom\n"`, created.UID)
	var seen []string
	deadline := time.After(2 * time.Minute)
	for restarted := false; !restarted; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			if ev.Type != watch.Modified {
				continue
			}
			cs := statusOf(ev.Object.(*corev1.Pod), "c0")
			if cs == nil {
				continue
			}
			if cs.State.Running != nil {
				t.Fatalf("the container shows running though its hook fails: %+v", cs)
			}
			if wt := cs.State.Waiting; wt != nil && wt.Reason == "PostStartHookError" {
				seen = append(seen, wt.Message)
			}
			restarted = cs.RestartCount >= 2
		case <-deadline:
			t.Fatalf("never restarted twice; PostStartHookError messages %q", seen)
		}
	}
	if len(seen) == 0 || seen[0] != want {
		t.Errorf("PostStartHookError messages %q, want %q", seen, want)
	}
	waitEvent(t, s.client, "failhook", corev1.EventTypeWarning, "FailedPostStartHook", "PostStartHook failed")
	waitEvent(t, s.client, "failhook", corev1.EventTypeNormal, "Killing", "FailedPostStartHook")
	got, err := pods.Get(ctx, "failhook", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if last := statusOf(got, "c0").LastTerminationState.Terminated; last == nil || last.ExitCode != 137 || last.StartedAt.IsZero() {
		t.Errorf("last termination %+v, want the kill (137: sleep as PID 1 ignores SIGTERM) with its start", last)
	}
	evs, err := s.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=failhook"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if strings.Contains(e.Message, "boom") {
			t.Errorf("event %s %q shows the hook's output", e.Reason, e.Message)
		}
	}
}
