package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// logPod stores a pod with the given containers and statuses.
func (ts *testServer) logPod(t *testing.T, policy corev1.RestartPolicy, names []string, statuses ...corev1.ContainerStatus) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:   corev1.PodSpec{RestartPolicy: policy, NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: statuses}}
	for _, n := range names {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: n, Image: "i"})
	}
	if err := ts.store.Create(db.Pods, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// appendLog appends CRI-format lines to a container attempt's log file.
func (ts *testServer) appendLog(t *testing.T, pod *corev1.Pod, container string, attempt int, lines ...string) {
	t.Helper()
	path := kube.ContainerLogPath(ts.logRoot, pod, container, attempt)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i, l := range lines {
		ts := time.Date(2026, 1, 2, 3, 4, 5, i, time.UTC).Format(time.RFC3339Nano)
		if _, err := fmt.Fprintf(f, "%s stdout F %s\n", ts, l); err != nil {
			t.Fatal(err)
		}
	}
}

func runningStatus(name string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

// waitingStatus is a container waiting to start for reason.
func waitingStatus(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

// restartedStatus is a container running its attempt restarts, the one
// before in lastState, as the pod worker records them.
func restartedStatus(name string, restarts int32) corev1.ContainerStatus {
	cs := runningStatus(name, restarts)
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, ContainerID: "containerd://before"}
	return cs
}

// crashLoopStatus is a container waiting to restart after its attempt
// restarts exited, that exit in lastState.
func crashLoopStatus(name string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, RestartCount: restarts,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, ContainerID: "containerd://last"}}}
}

func TestPodLog(t *testing.T) {
	tests := map[string]struct {
		containers []string
		statuses   []corev1.ContainerStatus
		query      string
		wantCode   int
		wantBody   string
	}{
		"only container": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{runningStatus("c", 1)},
			wantCode: 200, wantBody: "two-1\ntwo-2\n",
		},
		"previous": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{restartedStatus("c", 1)}, query: "?previous=true",
			wantCode: 200, wantBody: "one\n",
		},
		"tail": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{runningStatus("c", 1)}, query: "?tailLines=1",
			wantCode: 200, wantBody: "two-2\n",
		},
		"timestamps": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{runningStatus("c", 1)}, query: "?timestamps=true&limitBytes=36",
			wantCode: 200, wantBody: "2026-01-02T03:04:05.000000000Z two-1",
		},
		"named container": {
			containers: []string{"c", "d"}, statuses: []corev1.ContainerStatus{runningStatus("c", 1), runningStatus("d", 0)},
			query: "?container=d", wantCode: 200, wantBody: "dee\n",
		},
		"several containers need a name": {
			containers: []string{"c", "d"}, statuses: []corev1.ContainerStatus{runningStatus("c", 1), runningStatus("d", 0)},
			wantCode: 400, wantBody: "a container name must be specified for pod p, choose one of: [c d]",
		},
		"unknown container": {
			containers: []string{"c"}, query: "?container=x", wantCode: 400, wantBody: "container x is not valid for pod p",
		},
		"waiting to start": {
			containers: []string{"c"}, wantCode: 400, wantBody: `container "c" in pod "p" is waiting to start: ContainerCreating`,
		},
		"waiting with a reason": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{waitingStatus("c", "PodInitializing")},
			wantCode: 400, wantBody: `container "c" in pod "p" is waiting to start: PodInitializing`,
		},
		"image that cannot be pulled": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{waitingStatus("c", "ErrImagePull")},
			wantCode: 400, wantBody: `container "c" in pod "p" is waiting to start: image can't be pulled`,
		},
		"image pull back-off": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{waitingStatus("c", "ImagePullBackOff")},
			wantCode: 400, wantBody: `container "c" in pod "p" is waiting to start: trying and failing to pull image`,
		},
		"no state": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{{Name: "c"}},
			wantCode: 400, wantBody: `container "c" in pod "p" is waiting to start - no logs yet`,
		},
		"terminated without having run": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown"}}}},
			wantCode: 400, wantBody: `container "c" in pod "p" is terminated`,
		},
		"crash loop shows the last instance": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{crashLoopStatus("c", 1)},
			wantCode: 200, wantBody: "two-1\ntwo-2\n",
		},
		"previous in a crash loop is the last instance too": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{crashLoopStatus("c", 1)}, query: "?previous=true",
			wantCode: 200, wantBody: "two-1\ntwo-2\n",
		},
		"no previous": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{runningStatus("c", 0)}, query: "?previous=true",
			wantCode: 400, wantBody: `previous terminated container "c" in pod "p" not found`,
		},
		"no previous while waiting for the first start": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{waitingStatus("c", "ContainerCreating")}, query: "?previous=true",
			wantCode: 400, wantBody: `previous terminated container "c" in pod "p" not found`,
		},
		"an instance without its file": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{runningStatus("c", 2)},
			wantCode: 400,
		},
		"both since": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{runningStatus("c", 0)},
			query: "?sinceSeconds=1&sinceTime=2026-01-02T03:04:05Z", wantCode: 400,
		},
		"negative tail": {
			containers: []string{"c"}, statuses: []corev1.ContainerStatus{runningStatus("c", 0)}, query: "?tailLines=-1", wantCode: 400,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			pod := ts.logPod(t, corev1.RestartPolicyAlways, tc.containers, tc.statuses...)
			ts.appendLog(t, pod, "c", 0, "one")
			ts.appendLog(t, pod, "c", 1, "two-1", "two-2")
			ts.appendLog(t, pod, "d", 0, "dee")
			r := ts.do(t, "GET", podsPath+"/p/log"+tc.query, "")
			if r.code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", r.code, tc.wantCode, r.body)
			}
			if r.code != 200 {
				if st := statusOf(t, r.body); st.Message != tc.wantBody && tc.wantBody != "" {
					t.Errorf("message %q, want %q", st.Message, tc.wantBody)
				}
				return
			}
			if r.body != tc.wantBody {
				t.Errorf("body %q, want %q", r.body, tc.wantBody)
			}
			if ct := r.header.Get("Content-Type"); ct != "text/plain" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

func TestPodLogFollowAcrossRestarts(t *testing.T) {
	ts := newTestServer(t)
	pod := ts.logPod(t, corev1.RestartPolicyOnFailure, []string{"c"}, runningStatus("c", 0))
	ts.appendLog(t, pod, "c", 0, "first")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+podsPath+"/p/log?follow=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	readUntil := func(want string) string {
		t.Helper()
		var got []byte
		buf := make([]byte, 256)
		for !strings.HasSuffix(string(got), want) {
			n, err := resp.Body.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				t.Fatalf("reading %q so far: %v", got, err)
			}
		}
		return string(got)
	}
	readUntil("first\n")

	// The container restarts: its next attempt's file appears and the
	// status counts the restart.
	ts.appendLog(t, pod, "c", 1, "second")
	setStatus := func(s corev1.PodStatus) {
		t.Helper()
		if _, err := ts.store.Modify(db.Pods, "default", "p", func(obj db.Object) error {
			obj.(*corev1.Pod).Status = s
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	setStatus(corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{runningStatus("c", 1)}})
	readUntil("second\n")

	// The pod fails for good: the stream ends.
	setStatus(corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: 1,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}})
	rest, err := io.ReadAll(resp.Body)
	if err != nil || len(rest) != 0 {
		t.Errorf("after the end: %q, %v", rest, err)
	}
}
