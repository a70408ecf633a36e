//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// These tests check the pod worker (the kubelet's half) against real
// containerd and runc: one skiffd serves all the subtests of a test.

func terminated(p *corev1.Pod, name string) *corev1.ContainerStateTerminated {
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name {
				return cs.State.Terminated
			}
		}
	}
	return nil
}

func statusOf(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// ignoreTerm is a script that ignores SIGTERM (sh is PID 1 and traps it).
const ignoreTerm = "trap '' TERM; while true; do sleep 1; done"

func TestKubeletContainers(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	hostDir := t.TempDir()
	tests := map[string]struct {
		pod   func(p *corev1.Pod)
		check func(t *testing.T, p *corev1.Pod)
		until func(p *corev1.Pod) bool
	}{
		"OOM killed": {
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Command = []string{"tail", "/dev/zero"}
				p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("24Mi")}
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				term := terminated(p, "c0")
				if p.Status.Phase != corev1.PodFailed || term == nil || term.Reason != "OOMKilled" || term.ExitCode != 137 {
					t.Errorf("phase %s, terminated %+v: want Failed, OOMKilled 137", p.Status.Phase, term)
				}
				if p.Status.QOSClass != corev1.PodQOSBurstable {
					t.Errorf("qosClass %s, want Burstable", p.Status.QOSClass)
				}
			},
		},
		"read-only root filesystem refuses a write": {
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Command = []string{"sh", "-c", "touch /data/ok || exit 2; touch /x 2>/dev/termination-log && exit 0; exit 7"}
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(true)}
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				term := terminated(p, "c0")
				if term == nil || term.ExitCode != 7 || !strings.Contains(term.Message, "Read-only file system") {
					t.Errorf("terminated %+v, want exit 7 with 'Read-only file system' as message", term)
				}
			},
		},
		"runAsNonRoot refused for a root image": {
			pod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}
			},
			until: func(p *corev1.Pod) bool {
				cs := statusOf(p, "c0")
				return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerConfigError"
			},
			check: func(t *testing.T, p *corev1.Pod) {
				want := fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: c0)", fmt.Sprintf("%s_default(%s)", p.Name, p.UID))
				if got := statusOf(p, "c0").State.Waiting.Message; got != want {
					t.Errorf("message %q, want %q", got, want)
				}
				if p.Status.Phase != corev1.PodPending {
					t.Errorf("phase %s, want Pending", p.Status.Phase)
				}
			},
		},
		"runAsUser, groups and fsGroup": {
			pod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(3000)), FSGroup: ptr(int64(2000)), RunAsNonRoot: ptr(true)}
				p.Spec.Containers[0].Command = []string{"sh", "-c", `echo "$(id -u) $(id -g) $(id -G) $(stat -c %g /data)" > /dev/termination-log; touch /data/f`}
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				term := terminated(p, "c0")
				if term == nil || term.ExitCode != 0 || !strings.HasPrefix(term.Message, "1000 3000 ") || !strings.Contains(term.Message, "2000") || !strings.HasSuffix(term.Message, " 2000\n") {
					t.Errorf("terminated %+v: want uid 1000, gid 3000, group 2000, /data owned by group 2000", term)
				}
			},
		},
		"emptyDir shared between two containers": {
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Command = []string{"sh", "-c", "echo hello > /data/msg"}
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
					Name: "c1", Image: "busybox:1.35", Command: []string{"sh", "-c", "until [ -f /data/msg ]; do sleep 0.1; done; cat /data/msg > /dev/termination-log"},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				})
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				if term := terminated(p, "c1"); p.Status.Phase != corev1.PodSucceeded || term == nil || term.Message != "hello\n" {
					t.Errorf("phase %s, c1 %+v: want Succeeded with message hello", p.Status.Phase, term)
				}
			},
		},
		"memory emptyDir with sizeLimit": {
			pod: func(p *corev1.Pod) {
				p.Spec.Volumes[0].EmptyDir = &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("4Mi"))}
				p.Spec.Containers[0].Command = []string{"sh", "-c", "grep ' /data tmpfs' /proc/mounts > /dev/termination-log; dd if=/dev/zero of=/data/big bs=1M count=8 2>/dev/null && exit 0; exit 9"}
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				term := terminated(p, "c0")
				if term == nil || term.ExitCode != 9 || !strings.Contains(term.Message, "size=4096k") {
					t.Errorf("terminated %+v: want exit 9 (disk full) on a 4Mi tmpfs", term)
				}
			},
		},
		"hostPath, downwardAPI and subPath": {
			pod: func(p *corev1.Pod) {
				p.Labels = map[string]string{"app": "kubelet-test"}
				p.Spec.Volumes = append(p.Spec.Volumes,
					corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(hostDir, "made"), Type: ptr(corev1.HostPathDirectoryOrCreate)}}},
					corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
					}}}},
				)
				c := &p.Spec.Containers[0]
				c.VolumeMounts = append(c.VolumeMounts,
					corev1.VolumeMount{Name: "host", MountPath: "/host"},
					corev1.VolumeMount{Name: "info", MountPath: "/info"},
					corev1.VolumeMount{Name: "data", MountPath: "/sub", SubPath: "a/b"},
				)
				c.Command = []string{"sh", "-c", "echo hi > /host/f; echo sub > /sub/f; cat /info/labels > /dev/termination-log; touch /info/x 2>/dev/null && exit 4; exit 0"}
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				term := terminated(p, "c0")
				if term == nil || term.ExitCode != 0 || term.Message != `app="kubelet-test"` {
					t.Errorf("terminated %+v: want exit 0 with the labels as message", term)
				}
				if b, err := os.ReadFile(filepath.Join(hostDir, "made/f")); err != nil || string(b) != "hi\n" {
					t.Errorf("hostPath file: %q %v", b, err)
				}
			},
		},
		"hostPath type check fails": {
			pod: func(p *corev1.Pod) {
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: filepath.Join(hostDir, "missing"), Type: ptr(corev1.HostPathFile),
				}}})
			},
			until: func(p *corev1.Pod) bool {
				cs := statusOf(p, "c0")
				return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Message != ""
			},
			check: func(t *testing.T, p *corev1.Pod) {
				w := statusOf(p, "c0").State.Waiting
				want := fmt.Sprintf(`MountVolume.SetUp failed for volume "host" : hostPath type check failed: %s is not a file`, filepath.Join(hostDir, "missing"))
				if w.Reason != "ContainerCreating" || w.Message != want {
					t.Errorf("waiting %+v, want ContainerCreating with %q", w, want)
				}
			},
		},
		"activeDeadlineSeconds": {
			pod: func(p *corev1.Pod) {
				p.Spec.ActiveDeadlineSeconds = ptr(int64(1))
				p.Spec.Containers[0].Command = []string{"sh", "-c", "exec sleep 3600"}
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
					t.Errorf("phase %s reason %q message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
				}
				if c := podCondition(p, corev1.DisruptionTarget); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "TerminationByKubelet" {
					t.Errorf("DisruptionTarget = %+v", c)
				}
				// sleep as PID 1 ignores SIGTERM: killed after the 1s grace.
				if term := terminated(p, "c0"); term == nil || term.ExitCode != 137 {
					t.Errorf("terminated %+v, want exit 137 (SIGKILL)", term)
				}
				// The kubelet's active deadline handler's event, on the pod
				// (events are written behind the pod's status).
				waitFor(t, 30*time.Second, "the DeadlineExceeded event", func() (bool, error) {
					evs, err := s.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
						FieldSelector: "involvedObject.name=" + p.Name + ",reason=DeadlineExceeded"})
					if err != nil || len(evs.Items) == 0 {
						return false, err
					}
					ev := evs.Items[0]
					if len(evs.Items) != 1 || ev.Type != corev1.EventTypeNormal || ev.InvolvedObject.FieldPath != "" ||
						ev.Message != "Pod was active on the node longer than the specified deadline" {
						return false, fmt.Errorf("DeadlineExceeded events %+v, want one Normal on the pod", evs.Items)
					}
					return true, nil
				})
			},
		},
		"init container fails under Never": {
			pod: func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox:1.35", Command: []string{"sh", "-c", "exit 3"}}}
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				term := terminated(p, "init")
				if p.Status.Phase != corev1.PodFailed || term == nil || term.ExitCode != 3 {
					t.Errorf("phase %s, init %+v: want Failed, exit 3", p.Status.Phase, term)
				}
				if w := statusOf(p, "c0").State.Waiting; w == nil || w.Reason != "PodInitializing" {
					t.Errorf("c0 state %+v, want waiting PodInitializing", statusOf(p, "c0").State)
				}
				if c := podCondition(p, corev1.PodInitialized); c == nil || c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotInitialized" ||
					c.Message != "containers with incomplete status: [init]" {
					t.Errorf("Initialized = %+v", c)
				}
			},
		},
		"init containers in order, one retried under OnFailure": {
			pod: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
				mount := []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
				p.Spec.InitContainers = []corev1.Container{
					{Name: "first", Image: "busybox:1.35", Command: []string{"sh", "-c", "echo 1 >> /data/order; [ -f /data/ran ] && exit 0; touch /data/ran; exit 1"}, VolumeMounts: mount},
					{Name: "second", Image: "busybox:1.35", Command: []string{"sh", "-c", "echo 2 >> /data/order"}, VolumeMounts: mount},
				}
				p.Spec.Containers[0].Command = []string{"sh", "-c", "tr '\\n' ' ' < /data/order > /dev/termination-log"}
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				if term := terminated(p, "c0"); p.Status.Phase != corev1.PodSucceeded || term == nil || term.Message != "1 1 2 " {
					t.Errorf("phase %s, c0 %+v: want Succeeded with order '1 1 2 '", p.Status.Phase, term)
				}
				if cs := statusOf(p, "first"); cs.RestartCount != 1 || !cs.Ready {
					t.Errorf("first: restartCount %d ready %v, want 1 true", cs.RestartCount, cs.Ready)
				}
			},
		},
		"unsafe sysctl rejected": {
			pod: func(p *corev1.Pod) {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}}
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				want := `Pod was rejected: forbidden sysctl: "kernel.msgmax" not allowlisted`
				if p.Status.Phase != corev1.PodFailed || p.Status.Reason != "SysctlForbidden" || p.Status.Message != want {
					t.Errorf("phase %s reason %q message %q; want Failed, SysctlForbidden, %q", p.Status.Phase, p.Status.Reason, p.Status.Message, want)
				}
			},
		},
		"command not found: StartError": {
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Command = []string{"/no/such/binary"}
			},
			until: isFinished,
			check: func(t *testing.T, p *corev1.Pod) {
				term := terminated(p, "c0")
				if p.Status.Phase != corev1.PodFailed || term == nil || term.Reason != "StartError" || term.ExitCode != 128 || !strings.Contains(term.Message, "/no/such/binary") {
					t.Errorf("phase %s, terminated %+v: want Failed, StartError 128 naming the binary", p.Status.Phase, term)
				}
			},
		},
		"image not present with pull policy Never": {
			pod: func(p *corev1.Pod) {
				p.Spec.Containers[0].Image = "busybox:no-such-tag"
				p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
			},
			until: func(p *corev1.Pod) bool {
				cs := statusOf(p, "c0")
				return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "ErrImageNeverPull"
			},
			check: func(t *testing.T, p *corev1.Pod) {
				want := `Container image "busybox:no-such-tag" is not present with pull policy of Never`
				if got := statusOf(p, "c0").State.Waiting.Message; got != want || p.Status.Phase != corev1.PodPending {
					t.Errorf("phase %s, message %q; want Pending, %q", p.Status.Phase, got, want)
				}
			},
		},
		"httpGet and tcpSocket probes": {
			pod: func(p *corev1.Pod) {
				port := 20000 + int(time.Now().UnixNano()%20000)
				p.Spec.RestartPolicy = corev1.RestartPolicyAlways
				c := &p.Spec.Containers[0]
				c.Command = []string{"sh", "-c", fmt.Sprintf("mkdir -p /www; echo ok > /www/index.html; sleep 1; exec httpd -f -p %d -h /www", port)}
				c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}
				c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/index.html", Port: intstr.FromString("http")}}, PeriodSeconds: 1}
				c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(port)}}, PeriodSeconds: 1, InitialDelaySeconds: 2}
			},
			until: func(p *corev1.Pod) bool {
				c := podCondition(p, corev1.PodReady)
				return c != nil && c.Status == corev1.ConditionTrue
			},
			check: func(t *testing.T, p *corev1.Pod) {
				time.Sleep(3 * time.Second) // let the liveness probe run a few times
				got, err := s.client.CoreV1().Pods("default").Get(context.Background(), p.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if cs := statusOf(got, "c0"); cs.RestartCount != 0 || !cs.Ready || cs.State.Running == nil {
					t.Errorf("status %+v, want running, ready, never restarted", cs)
				}
				if err := s.client.CoreV1().Pods("default").Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
					t.Error(err)
				}
			},
		},
		"liveness probe fails": {
			pod: func(p *corev1.Pod) {
				p.Spec.RestartPolicy = corev1.RestartPolicyAlways
				p.Spec.Containers[0].Command = []string{"sh", "-c", "[ -f /data/restarted ] && exec sleep 3600; touch /data/restarted; " + ignoreTerm}
				p.Spec.Containers[0].LivenessProbe = &corev1.Probe{
					ProbeHandler:                  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "[ ! -f /data/restarted ] || [ -f /data/second ] || { touch /data/second; echo not alive; exit 1; }"}}},
					PeriodSeconds:                 1,
					FailureThreshold:              1,
					TerminationGracePeriodSeconds: ptr(int64(1)),
					// NOTE: the default 1 s was exceeded on a loaded CI
					// machine ("timed out" instead of the output).
					TimeoutSeconds: 10,
				}
			},
			until: func(p *corev1.Pod) bool {
				cs := statusOf(p, "c0")
				return cs != nil && cs.RestartCount == 1 && cs.State.Running != nil
			},
			check: func(t *testing.T, p *corev1.Pod) {
				last := statusOf(p, "c0").LastTerminationState.Terminated
				if last == nil || last.ExitCode != 137 || last.Reason != "Error" {
					t.Errorf("lastState %+v, want killed (137, Error)", last)
				}
				if d := last.FinishedAt.Sub(last.StartedAt.Time); d < 2*time.Second {
					t.Errorf("killed %s after its start: want the probe, then at least 2s of grace", d)
				}
				// The kubelet's Unhealthy event carries the probe's output
				// (events are written behind the pod's status).
				var unhealthy, killing []string
				waitFor(t, 30*time.Second, "the Unhealthy and Killing events", func() (bool, error) {
					evs, err := s.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
					if err != nil {
						return false, err
					}
					unhealthy, killing = nil, nil
					for _, ev := range evs.Items {
						switch ev.Reason {
						case "Unhealthy":
							unhealthy = append(unhealthy, ev.Type+" "+ev.InvolvedObject.FieldPath+" "+ev.Message)
						case "Killing":
							killing = append(killing, ev.Message)
						}
					}
					return len(unhealthy) > 0 && len(killing) > 0, nil
				})
				if len(unhealthy) != 1 || unhealthy[0] != "Warning spec.containers{c0} Liveness probe failed: not alive\n" {
					t.Errorf("Unhealthy events %q, want one Warning on spec.containers{c0} with the probe's output", unhealthy)
				}
				if len(killing) != 1 || killing[0] != "Container c0 failed liveness probe, will be restarted" {
					t.Errorf("Killing events %q, want the kubelet's liveness message", killing)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			podName := strings.NewReplacer(" ", "-", ",", "", ":", "").Replace(strings.ToLower(name))
			if len(podName) > 50 {
				podName = podName[:50]
			}
			podName = strings.Trim(podName, "-")
			pod := shPod(podName, corev1.RestartPolicyNever, "exit 0")
			tc.pod(pod)
			ctx := context.Background()
			if _, err := s.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			got := waitPod(t, s.client, podName, time.Minute, "to reach its state", tc.until)
			tc.check(t, got)
			if t.Failed() {
				t.Logf("status: %+v", got.Status)
			}
		})
	}
}

// TestKubeletCrashLoop: a container failing over and over waits in
// CrashLoopBackOff between its restarts, its last exit in lastState. The
// back-off here is long enough (500ms doubling to 5s) for the state to be
// seen, and resets only after 10s of running.
func TestKubeletCrashLoop(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--restart-backoff-base", "500ms", "--restart-backoff-max", "5s")
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, shPod("crashing", corev1.RestartPolicyOnFailure, "exit 5"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, s.client, "crashing", time.Minute, "in CrashLoopBackOff", func(p *corev1.Pod) bool {
		cs := statusOf(p, "c0")
		return cs != nil && cs.RestartCount >= 1 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	cs := statusOf(p, "c0")
	want := fmt.Sprintf("back-off 500ms restarting failed container=c0 pod=crashing_default(%s)", p.UID)
	if cs.RestartCount == 1 && cs.State.Waiting.Message != want {
		t.Errorf("message %q, want %q", cs.State.Waiting.Message, want)
	}
	if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 5 || last.Reason != "Error" {
		t.Errorf("lastState %+v, want exit 5", cs.LastTerminationState)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running while it restarts", p.Status.Phase)
	}
}

// TestKubeletGracePeriod: a container ignoring SIGTERM is killed once the
// deletion's grace period has passed, after its preStop hook ran.
func TestKubeletGracePeriod(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")
	hostDir := t.TempDir()
	pod := shPod("stubborn", corev1.RestartPolicyNever, ignoreTerm)
	pod.Finalizers = []string{"skiff.test/keep"} // to read the final status
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(3))
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}})
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "host", MountPath: "/host"})
	c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "echo ran > /host/prestop; sleep 1"}},
	}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.client, "stubborn", time.Minute, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	deleted := time.Now()
	if err := pods.Delete(ctx, "stubborn", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(2))}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, s.client, "stubborn", time.Minute, "stopped", isFinished)
	took := time.Since(deleted)
	term := terminated(got, "c0")
	if got.Status.Phase != corev1.PodFailed || term == nil || term.ExitCode != 137 {
		t.Errorf("phase %s, terminated %+v: want Failed, SIGKILLed (137)", got.Status.Phase, term)
	}
	if took < 2*time.Second || took > 10*time.Second {
		t.Errorf("stopped %s after the deletion, want about the 2s grace period", took)
	}
	if b, err := os.ReadFile(filepath.Join(hostDir, "prestop")); err != nil || string(b) != "ran\n" {
		t.Errorf("preStop hook: %q %v, want it to have run", b, err)
	}
	patch := `{"metadata":{"finalizers":null}}`
	if _, err := pods.Patch(ctx, "stubborn", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestKubeletSidecarJob: a sidecar starts before the main container, runs
// beside it, and is stopped once it is done: the Job completes.
func TestKubeletSidecarJob(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	job := shJob("sidecar", "test -f /data/side-up && echo main-saw-sidecar", 1, 1, 0, corev1.RestartPolicyNever)
	spec := &job.Spec.Template.Spec
	spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	mount := []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	spec.Containers[0].VolumeMounts = mount
	spec.InitContainers = []corev1.Container{{
		Name: "side", Image: "busybox:1.35", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
		Command:      []string{"sh", "-c", "touch /data/side-up; " + ignoreTerm},
		VolumeMounts: mount,
		StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/data/side-up"}}}, PeriodSeconds: 1},
	}}
	if _, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := waitJob(t, s.client, "default", "sidecar", batchv1.JobComplete, time.Minute)
	pods := jobPods(t, s.client, done)
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1", len(pods))
	}
	p := &pods[0]
	if p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("pod phase %s, want Succeeded", p.Status.Phase)
	}
	if term := terminated(p, "main"); term == nil || term.ExitCode != 0 {
		t.Errorf("main %+v, want exit 0", term)
	}
	side := statusOf(p, "side")
	if side == nil || side.State.Terminated == nil {
		t.Fatalf("sidecar %+v, want terminated", side)
	}
	if side.State.Terminated.FinishedAt.Before(&terminated(p, "main").FinishedAt) {
		t.Errorf("sidecar stopped before main ended")
	}
}

// TestKubeletReadinessJobReady: readiness probes drive the pods' Ready
// condition, which the Job controller counts in status.ready.
func TestKubeletReadinessJobReady(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	// NOTE: both pods must be ready at once: on a loaded CI machine their
	// starts were more than 4 s apart.
	job := shJob("ready", "sleep 1; touch /tmp/ready; sleep 20", 2, 2, 0, corev1.RestartPolicyNever)
	// NOTE: an exec probe's default 1 s timeout is less than a runc exec
	// may take on a loaded 2-core machine (CI once saw the two pods never
	// ready at once; a probe that times out fails).
	job.Spec.Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/tmp/ready"}}},
		PeriodSeconds:  1,
		TimeoutSeconds: 10,
	}
	if _, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var sawUnready bool
	waitFor(t, time.Minute, "job ready 2", func() (bool, error) {
		j, err := s.client.BatchV1().Jobs("default").Get(ctx, "ready", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if j.Status.Active == 2 && j.Status.Ready != nil && *j.Status.Ready == 0 {
			sawUnready = true
		}
		return j.Status.Ready != nil && *j.Status.Ready == 2, nil
	})
	if !sawUnready {
		t.Error("never saw the active pods unready before their probe passed")
	}
	waitJob(t, s.client, "default", "ready", batchv1.JobComplete, time.Minute)
}

// TestKubeletAdmission: pods whose requests do not fit the node's
// allocatable wait Unschedulable, and start in creation order once room
// frees.
func TestKubeletAdmission(t *testing.T) {
	t.Parallel()
	total, err := memTotal()
	if err != nil {
		t.Fatal(err)
	}
	// Leave 100Mi of memory to pods.
	s := newSkiffd(t, "--system-reserved", fmt.Sprintf("cpu=100m,memory=%d", total-100<<20))
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")
	withMemory := func(name, script, mem string) *corev1.Pod {
		p := shPod(name, corev1.RestartPolicyNever, script)
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}
		return p
	}
	if _, err := pods.Create(ctx, withMemory("first", "sleep 3", "80Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.client, "first", time.Minute, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if _, err := pods.Create(ctx, withMemory("second", "exit 0", "80Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	huge := shPod("huge", corev1.RestartPolicyNever, "exit 0")
	huge.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	if _, err := pods.Create(ctx, huge, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	unschedulable := func(msg string) func(p *corev1.Pod) bool {
		return func(p *corev1.Pod) bool {
			c := podCondition(p, corev1.PodScheduled)
			return c != nil && c.Status == corev1.ConditionFalse && c.Reason == "Unschedulable" && c.Message == msg
		}
	}
	second := waitPod(t, s.client, "second", time.Minute, "unschedulable", unschedulable("0/1 nodes are available: 1 Insufficient memory."))
	if second.Status.Phase != corev1.PodPending || len(second.Status.ContainerStatuses) != 0 {
		t.Errorf("second: phase %s, %d container statuses; want Pending, none", second.Status.Phase, len(second.Status.ContainerStatuses))
	}
	waitPod(t, s.client, "huge", time.Minute, "unschedulable", unschedulable("0/1 nodes are available: 1 Insufficient cpu."))
	first := waitPod(t, s.client, "first", time.Minute, "done", isFinished)
	second = waitPod(t, s.client, "second", time.Minute, "run once first is done", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if second.Status.StartTime.Before(&terminated(first, "c0").FinishedAt) {
		t.Errorf("second started at %s, before first finished at %s", second.Status.StartTime, terminated(first, "c0").FinishedAt)
	}
	if c := podCondition(second, corev1.PodScheduled); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("second PodScheduled = %+v, want True", c)
	}
	if p, err := pods.Get(ctx, "huge", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodPending {
		t.Errorf("huge: %v %v, want still Pending", p.Status.Phase, err)
	}
}

// TestKubeletParallelism100: a Job with parallelism 100 whose pods ask for
// half a CPU runs no more of them at once than the node's allocatable
// holds, and completes.
func TestKubeletParallelism100(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--system-reserved", "cpu=500m")
	s.start()
	ctx := context.Background()
	job := shJob("wide", "sleep 0.5", 12, 100, 0, corev1.RestartPolicyNever)
	job.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	if _, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	capacity, _ := resource.ParseQuantity(fmt.Sprint(goruntime.NumCPU()))
	capacity.Sub(resource.MustParse("500m"))
	most := int(capacity.MilliValue() / 500)
	maxRunning := 0
	waitFor(t, 2*time.Minute, "job wide complete", func() (bool, error) {
		list, err := s.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		admitted := 0
		for _, p := range list.Items {
			if c := podCondition(&p, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionTrue && !isFinished(&p) {
				admitted++
			}
		}
		maxRunning = max(maxRunning, admitted)
		j, err := s.client.BatchV1().Jobs("default").Get(ctx, "wide", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return j.Status.Succeeded == 12, nil
	})
	if maxRunning > most || maxRunning == 0 {
		t.Errorf("at most %d pods admitted at once, want 1..%d", maxRunning, most)
	}
}

// TestKubeletRecoversInit: skiffd killed while an init container and a
// sidecar run picks them up again on restart: the init container is not
// run twice, the sidecar keeps its instance, the pod completes.
func TestKubeletRecoversInit(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pod := shPod("resumed", corev1.RestartPolicyNever, "cat /data/count > /dev/termination-log")
	mount := []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "side", Image: "busybox:1.35", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways), Command: []string{"sh", "-c", ignoreTerm}},
		{Name: "init", Image: "busybox:1.35", Command: []string{"sh", "-c", "echo run >> /data/count; sleep 2"}, VolumeMounts: mount},
	}
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitPod(t, s.client, "resumed", time.Minute, "init running", func(p *corev1.Pod) bool {
		cs := statusOf(p, "init")
		return cs != nil && cs.State.Running != nil
	})
	s.kill()
	s.start()
	after := waitPod(t, s.client, "resumed", time.Minute, "done", isFinished)
	if term := terminated(after, "c0"); after.Status.Phase != corev1.PodSucceeded || term == nil || term.Message != "run\n" {
		t.Errorf("phase %s, c0 %+v: want Succeeded, the init container run once", after.Status.Phase, term)
	}
	if cs := statusOf(after, "init"); cs.RestartCount != 0 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
		t.Errorf("init %+v, want completed without restart", cs)
	}
	side := statusOf(after, "side")
	if side.RestartCount != 0 || side.State.Terminated == nil || side.State.Terminated.ContainerID != statusOf(before, "side").ContainerID {
		t.Errorf("sidecar %+v, want its first instance stopped at the end", side)
	}
}

// memTotal is the machine's memory, as skiffd reads its capacity.
func memTotal() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal in /proc/meminfo")
}
