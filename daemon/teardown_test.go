//go:build integration

package daemon_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/failpoint"
)

// TestFinishedPodTeardownSurvivesKill: skiffd killed once a pod's final
// status is stored, before its containers, network and volumes are
// released (that teardown runs off the pod's path), leaves nothing of them
// once it is back, without the pod being deleted: the pod keeps its status
// and its log.
func TestFinishedPodTeardownSurvivesKill(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--sweep-interval", "300ms")
	s.useFailpoint(failpoint.AfterPodFinished)
	s.start()
	ctx := context.Background()
	pod := shPod("done", corev1.RestartPolicyNever, "echo finished")
	pod.Spec.Volumes[0].EmptyDir.Medium = corev1.StorageMediumMemory
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitKilledAt(failpoint.AfterPodFinished, 2*time.Minute)
	logDir := filepath.Join(s.dataDir, "logs")
	withoutLogs := func(left []string) []string {
		var out []string
		for _, l := range left {
			if !strings.HasPrefix(l, logDir) {
				out = append(out, l)
			}
		}
		return out
	}
	if left := withoutLogs(s.leftovers()); len(left) == 0 {
		t.Fatal("nothing left to release at the failpoint")
	}

	s.start()
	waitFor(t, time.Minute, "the finished pod's containers, network and volumes to be released", func() (bool, error) {
		return len(withoutLogs(s.leftovers())) == 0, nil
	})
	p, err := s.client.CoreV1().Pods("default").Get(ctx, "done", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodSucceeded || len(p.Status.ContainerStatuses) != 1 || summarize(p.Status.ContainerStatuses[0]) != (containerSummary{Name: "c0", ExitCode: 0, Reason: "Completed"}) {
		t.Errorf("after the restart: phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
	}
	b, err := s.client.CoreV1().Pods("default").GetLogs("done", &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || string(b) != "finished\n" {
		t.Errorf("the finished pod's log: %q, %v", b, err)
	}
}
