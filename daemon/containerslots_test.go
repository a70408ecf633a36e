//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestMaxContainers: with --max-containers 3, a pod of 6 containers starts
// them in spec order, never runs more than 3 at once, shows the container
// past the cap waiting with reason MaxContainersReached (and an event),
// and completes as slots free up.
func TestMaxContainers(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--max-containers", "3")
	s.start()
	ctx := context.Background()
	gate := t.TempDir()
	const n = 6
	scripts := make([]string, n)
	for i := range scripts {
		scripts[i] = "while [ ! -e /gate/go ]; do sleep 0.05; done"
	}
	pod := shPod("many", corev1.RestartPolicyNever, scripts...)
	pod.Spec.Volumes = []corev1.Volume{{Name: "gate", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: gate}}}}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = []corev1.VolumeMount{{Name: "gate", MountPath: "/gate"}}
	}

	w, err := s.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=many"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	mostRunning := 0
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				continue
			}
			p := ev.Object.(*corev1.Pod)
			running := 0
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Running != nil {
					running++
				}
			}
			mu.Lock()
			mostRunning = max(mostRunning, running)
			mu.Unlock()
		}
	}()
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	p := waitPod(t, s.client, "many", time.Minute, "c3 waiting for a slot", func(p *corev1.Pod) bool {
		cs := containerStatus(p, "c3")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "MaxContainersReached"
	})
	for i, cs := range p.Status.ContainerStatuses {
		if i < 3 && cs.State.Running == nil {
			t.Errorf("%s: %+v, want running", cs.Name, cs.State)
		}
	}
	if msg := containerStatus(p, "c3").State.Waiting.Message; !strings.Contains(msg, "maximum of 3 containers (--max-containers)") {
		t.Errorf("waiting message %q does not name the cap", msg)
	}
	for _, name := range []string{"c4", "c5"} { // they wait for c3's turn
		if cs := containerStatus(p, name); cs == nil || cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
			t.Errorf("%s: %+v, want waiting in ContainerCreating behind c3", name, cs)
		}
	}
	waitFor(t, time.Minute, "the MaxContainersReached event", func() (bool, error) {
		evs, err := s.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.InvolvedObject.Name == "many" && ev.Reason == "MaxContainersReached" && ev.Type == corev1.EventTypeWarning {
				return true, nil
			}
		}
		return false, nil
	})

	touch(t, gate, "go")
	p = waitPod(t, s.client, "many", 2*time.Minute, "the pod succeeded", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	if p.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("pod %s: %+v", p.Status.Phase, p.Status.ContainerStatuses)
	}
	var prev time.Time
	for i := range n {
		cs := containerStatus(p, fmt.Sprintf("c%d", i))
		started := cs.State.Terminated.StartedAt.Time
		if started.Before(prev) {
			t.Errorf("c%d started at %s, before c%d (%s): want spec order", i, started, i-1, prev)
		}
		prev = started
	}
	mu.Lock()
	defer mu.Unlock()
	if mostRunning > 3 {
		t.Errorf("%d containers ran at once, want at most 3", mostRunning)
	}
}

func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}
