package podworker

import (
	"errors"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
)

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "job-a-x2k4d", Namespace: "team", UID: "1234",
			Labels:      map[string]string{"batch.kubernetes.io/job-completion-index": "3"},
			Annotations: map[string]string{"note": "hi"},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: "runner",
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "busybox:1.35",
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi"), corev1.ResourceCPU: resource.MustParse("1500m")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
				},
			}},
		},
	}
}

var testNode = nodeInfo{name: "node1", hostIP: "10.1.2.3", logRoot: "/logs", cpu: resource.MustParse("2"), memory: resource.MustParse("1Gi"), storage: resource.MustParse("10Gi")}

// testWorker is a worker for pod on a Manager without store or runtime.
func testWorker(t *testing.T, pod *corev1.Pod) *worker {
	t.Helper()
	m := New(Config{NodeName: testNode.name, HostIP: testNode.hostIP, LogRoot: testNode.logRoot, CPU: testNode.cpu, Memory: testNode.memory})
	return newWorker(m, pod, nil)
}

func TestResolveEnv(t *testing.T) {
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	res := func(r, divisor string) *corev1.EnvVarSource {
		s := &corev1.ResourceFieldSelector{Resource: r}
		if divisor != "" {
			s.Divisor = resource.MustParse(divisor)
		}
		return &corev1.EnvVarSource{ResourceFieldRef: s}
	}
	env := []corev1.EnvVar{
		{Name: "A", Value: "a"},
		{Name: "B", Value: "$(A)-b-$(LATER)"},
		{Name: "INDEX", ValueFrom: field("metadata.labels['batch.kubernetes.io/job-completion-index']")},
		{Name: "NOTE", ValueFrom: field("metadata.annotations['note']")},
		{Name: "NAME", ValueFrom: field("metadata.name")},
		{Name: "NS", ValueFrom: field("metadata.namespace")},
		{Name: "UID", ValueFrom: field("metadata.uid")},
		{Name: "NODE", ValueFrom: field("spec.nodeName")},
		{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
		{Name: "IP", ValueFrom: field("status.podIP")},
		{Name: "MEM", ValueFrom: res("limits.memory", "1Mi")},
		{Name: "CPU", ValueFrom: res("limits.cpu", "")},
		{Name: "CPUM", ValueFrom: res("requests.cpu", "1m")},
		{Name: "STORAGE", ValueFrom: res("limits.ephemeral-storage", "1Gi")},
		{Name: "LATER", Value: "z"},
		{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k", Optional: ptr(true)}}},
	}
	pod := testPod()
	pod.Spec.Containers[0].Env = env
	got, err := resolveEnv(pod, &pod.Spec.Containers[0], testNode, fakeSources{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"A=a", "B=a-b-$(LATER)", "INDEX=3", "NOTE=hi", "NAME=job-a-x2k4d", "NS=team", "UID=1234",
		"NODE=node1", "SA=runner", "IP=10.1.2.3", "MEM=64", "CPU=2", "CPUM=250", "STORAGE=10", "LATER=z",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("env (-want,+got):\n%s", diff)
	}
}

func TestResolveEnvErrors(t *testing.T) {
	tests := map[string]corev1.EnvVar{
		"missing secret":    {Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}},
		"missing configmap": {Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"}}},
		"bad field":         {Name: "F", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nope"}}},
	}
	for name, e := range tests {
		t.Run(name, func(t *testing.T) {
			pod := testPod()
			pod.Spec.Containers[0].Env = []corev1.EnvVar{e}
			_, err := resolveEnv(pod, &pod.Spec.Containers[0], testNode, fakeSources{})
			var ce *configError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a configError", err)
			}
		})
	}
}

func TestContainerConfig(t *testing.T) {
	pod := testPod()
	c := &pod.Spec.Containers[0]
	c.Command = []string{"sh", "-c", "echo $(GREETING) $$(GREETING)"}
	c.Args = []string{"$(GREETING)"}
	c.Env = []corev1.EnvVar{{Name: "GREETING", Value: "hello"}}
	c.WorkingDir = "/tmp"
	pod.Spec.Hostname = "job-a-3"
	w := testWorker(t, pod)
	got, err := w.containerConfig(pod, c, 2, runtime.ImageInfo{})
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.ContainerConfig{
		ID:         InstanceID("1234", "main", 2),
		Image:      "busybox:1.35",
		Command:    []string{"sh", "-c", "echo hello $(GREETING)"},
		Args:       []string{"hello"},
		Env:        []string{"GREETING=hello"},
		WorkingDir: "/tmp",
		Hostname:   "job-a-3",
		Labels: map[string]string{
			runtime.LabelManaged: "true", runtime.LabelPodUID: "1234", runtime.LabelPodName: "job-a-x2k4d",
			runtime.LabelPodNamespace: "team", runtime.LabelContainerName: "main", runtime.LabelAttempt: "2",
		},
		LogPath:     "/logs/team_job-a-x2k4d_1234/main/2.log",
		MemoryLimit: 64 << 20,
		CPUShares:   256,
		CPUQuota:    150000,
		CPUPeriod:   100000,
		Seccomp:     runtime.Seccomp{Type: runtime.SeccompUnconfined},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want,+got):\n%s", diff)
	}
	if InstanceID("1234", "main", 2) == InstanceID("1234", "main", 3) {
		t.Error("instance IDs of two attempts collide")
	}
}

// TestTranslateContainer drives the pure translation of a container with
// what the worker would have gathered: no store, runtime, network or files.
func TestTranslateContainer(t *testing.T) {
	own := &network.Sandbox{NetNSPath: "/n/netns/u1/cni-1", IP: "10.88.0.7", HostsPath: "/n/pods/u1/hosts", ResolvConfPath: "/n/pods/u1/resolv.conf"}
	hostNet := &network.Sandbox{IP: "10.1.2.3", HostsPath: "/n/pods/u1/hosts", ResolvConfPath: "/n/pods/u1/resolv.conf"}
	nonRoot := &corev1.PodSecurityContext{RunAsNonRoot: ptr(true)}
	mounts := []runtime.Mount{
		{Source: "/v/1234/data", Destination: "/data", Type: "bind"},
		{Source: "/v/1234/cfg", Destination: "/etc/app", Type: "bind", Options: []string{"ro"}},
	}
	base := func(attempt int) runtime.ContainerConfig {
		return runtime.ContainerConfig{
			ID: InstanceID("1234", "main", attempt), Image: "busybox:1.35", Hostname: "job-a-x2k4d",
			Labels: map[string]string{
				runtime.LabelManaged: "true", runtime.LabelPodUID: "1234", runtime.LabelPodName: "job-a-x2k4d",
				runtime.LabelPodNamespace: "team", runtime.LabelContainerName: "main", runtime.LabelAttempt: strconv.Itoa(attempt),
			},
			LogPath:     "/logs/team_job-a-x2k4d_1234/main/" + strconv.Itoa(attempt) + ".log",
			MemoryLimit: 64 << 20, CPUShares: 256, CPUQuota: 150000, CPUPeriod: 100000,
			Seccomp: runtime.Seccomp{Type: runtime.SeccompUnconfined},
		}
	}
	tests := map[string]struct {
		change  func(pod *corev1.Pod, c *corev1.Container)
		in      containerInputs
		want    func(cfg *runtime.ContainerConfig)
		wantErr string // a configError's message
	}{
		"the first attempt, nothing else": {
			in: containerInputs{attempt: 0},
		},
		"env expands command and args; $$ escapes": {
			change: func(_ *corev1.Pod, c *corev1.Container) {
				c.Command = []string{"sh", "-c", "echo $(A) $$(A) $(UNSET)"}
				c.Args = []string{"$(B)"}
			},
			in: containerInputs{attempt: 1, env: []string{"A=1", "B=2", "A=3"}},
			want: func(cfg *runtime.ContainerConfig) {
				cfg.Command = []string{"sh", "-c", "echo 3 $(A) $(UNSET)"}
				cfg.Args = []string{"2"}
				cfg.Env = []string{"A=1", "B=2", "A=3"}
			},
		},
		"no resources: no limits, no shares": {
			change: func(_ *corev1.Pod, c *corev1.Container) { c.Resources = corev1.ResourceRequirements{} },
			in:     containerInputs{attempt: 1},
			want: func(cfg *runtime.ContainerConfig) {
				cfg.MemoryLimit, cfg.CPUShares, cfg.CPUQuota, cfg.CPUPeriod = 0, 0, 0, 0
			},
		},
		"mounts as prepared": {
			in:   containerInputs{attempt: 1, mounts: mounts},
			want: func(cfg *runtime.ContainerConfig) { cfg.Mounts = mounts },
		},
		"own network: its namespace and files, the pod's hostname": {
			change: func(pod *corev1.Pod, _ *corev1.Container) { pod.Spec.Hostname = "job-a-3" },
			in:     containerInputs{attempt: 1, sandbox: own},
			want: func(cfg *runtime.ContainerConfig) {
				cfg.Hostname = "job-a-3"
				cfg.NetNSPath, cfg.HostsPath, cfg.ResolvConfPath = own.NetNSPath, own.HostsPath, own.ResolvConfPath
			},
		},
		"host network: the node's hostname": {
			in: containerInputs{attempt: 1, sandbox: hostNet},
			want: func(cfg *runtime.ContainerConfig) {
				cfg.Hostname = ""
				cfg.HostsPath, cfg.ResolvConfPath = hostNet.HostsPath, hostNet.ResolvConfPath
			},
		},
		"stdin and tty": {
			change: func(_ *corev1.Pod, c *corev1.Container) { c.Stdin, c.TTY = true, true },
			in:     containerInputs{attempt: 1},
			want:   func(cfg *runtime.ContainerConfig) { cfg.Stdin, cfg.TTY = true, true },
		},
		"runAsNonRoot, numeric image user: the image's user": {
			change: func(pod *corev1.Pod, _ *corev1.Container) { pod.Spec.SecurityContext = nonRoot },
			in:     containerInputs{attempt: 1, image: runtime.ImageInfo{User: "1000:1000"}},
		},
		"runAsUser and runAsGroup of the pod": {
			change: func(pod *corev1.Pod, _ *corev1.Container) {
				pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(2000))}
			},
			in: containerInputs{attempt: 1},
			want: func(cfg *runtime.ContainerConfig) {
				cfg.User = &runtime.User{UID: 1000, GID: ptr(uint32(2000))}
			},
		},
		"runAsNonRoot, root image": {
			change:  func(pod *corev1.Pod, _ *corev1.Container) { pod.Spec.SecurityContext = nonRoot },
			in:      containerInputs{attempt: 1},
			wantErr: `container has runAsNonRoot and image will run as root (pod: "job-a-x2k4d_team(1234)", container: main)`,
		},
		"localhost seccomp under the profile root": {
			change: func(_ *corev1.Pod, c *corev1.Container) {
				c.SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{
					Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr("audit.json")}}
			},
			in: containerInputs{attempt: 1, seccomp: seccompConfig{root: "/var/lib/skiff/seccomp"}},
			want: func(cfg *runtime.ContainerConfig) {
				cfg.Seccomp = runtime.Seccomp{Type: runtime.SeccompLocalhost, LocalhostPath: "/var/lib/skiff/seccomp/audit.json"}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := testPod()
			c := &pod.Spec.Containers[0]
			if tc.change != nil {
				tc.change(pod, c)
			}
			tc.in.node = testNode
			got, err := translateContainer(pod, c, tc.in)
			if tc.wantErr != "" {
				var ce *configError
				if !errors.As(err, &ce) || err.Error() != tc.wantErr {
					t.Fatalf("got %v, want the configError %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := base(tc.in.attempt)
			if tc.want != nil {
				tc.want(&want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("config (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPullPolicy(t *testing.T) {
	tests := map[string]struct {
		image  string
		policy corev1.PullPolicy
		want   runtime.PullPolicy
	}{
		"tagged":         {"busybox:1.35", "", runtime.PullIfNotPresent},
		"untagged":       {"busybox", "", runtime.PullAlways},
		"latest":         {"busybox:latest", "", runtime.PullAlways},
		"registry port":  {"localhost:5000/busybox", "", runtime.PullAlways},
		"digest":         {"busybox@sha256:abcd", "", runtime.PullIfNotPresent},
		"explicit never": {"busybox", corev1.PullNever, runtime.PullNever},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := &corev1.Container{Image: tc.image, ImagePullPolicy: tc.policy}
			if got := pullPolicy(c); got != tc.want {
				t.Errorf("pullPolicy(%q) = %s, want %s", tc.image, got, tc.want)
			}
		})
	}
}
