//go:build integration

package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// TestKubectlTop runs the real kubectl top against skiffd: a pod that
// burns CPU shows a CPU figure well above an idle pod's, the label selector
// picks the pods, and the node shows its usage.
func TestKubectlTop(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--metric-resolution", "500ms")
	s.start()
	ctx := context.Background()
	pod := func(name, app, script string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr(int64(0)),
				Containers:                    []corev1.Container{{Name: "main", Image: "busybox:1.35", Command: []string{"sh", "-c", script}}},
			},
		}
	}
	for _, p := range []*corev1.Pod{pod("burn", "burn", "dd if=/dev/zero of=/dev/shm/fill bs=1M count=48 && while :; do :; done"), pod("idle", "idle", "sleep 3600")} {
		if _, err := s.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	home := t.TempDir()
	kubectlOf := func(bin string, args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	kubectl := func(args ...string) (string, error) { return kubectlOf("/usr/bin/kubectl", args...) }
	// Each pod shows once it has been sampled twice.
	var out string
	waitFor(t, 90*time.Second, "kubectl top pod to show both pods", func() (bool, error) {
		var err error
		out, err = kubectl("top", "pod")
		return err == nil && strings.Contains(out, "burn") && strings.Contains(out, "idle"), nil
	})
	t.Logf("kubectl top pod:\n%s", out)
	rows := topRows(t, out, "NAME", "CPU(cores)", "MEMORY(bytes)")
	burnCPU, idleCPU := quantity(t, rows["burn"][0]), quantity(t, rows["idle"][0])
	if burnCPU.MilliValue() < 100 || burnCPU.MilliValue() <= 10*idleCPU.MilliValue() {
		t.Errorf("kubectl top pod: burn uses %s CPU, idle %s: want burn at 100m or more and far above idle\n%s", &burnCPU, &idleCPU, out)
	}
	// The 48 MiB the burning pod keeps in /dev/shm are in its working set
	// (kubectl shows whole MiB: the shell alone is below one).
	if burnMem, idleMem := quantity(t, rows["burn"][1]), quantity(t, rows["idle"][1]); burnMem.Value() < 48<<20 || burnMem.Value() > 128<<20 || idleMem.Value() > 16<<20 {
		t.Errorf("kubectl top pod: burn's working set %s, idle's %s: want 48-128Mi and under 16Mi\n%s", &burnMem, &idleMem, out)
	}

	out, err := kubectl("top", "pod", "-l", "app=burn", "--containers")
	if err != nil || !strings.Contains(out, "burn") || strings.Contains(out, "idle") || !strings.Contains(out, "main") {
		t.Errorf("kubectl top pod -l app=burn --containers: %v\n%s", err, out)
	}

	// Every kubectl of the machine finds the API and reads it.
	for version, k := range kubectlVersions {
		out, err := kubectlOf(k.path, "top", "pod", "burn", "--no-headers")
		// (kubectl 1.27 warns on standard error of the missing kubeconfig.)
		if err != nil || !strings.HasPrefix(out, "burn ") && !strings.Contains(out, "\nburn ") {
			t.Errorf("kubectl %s top pod burn: %v\n%s", version, err, out)
		}
	}

	out, err = kubectl("top", "node")
	if err != nil {
		t.Fatalf("kubectl top node: %v\n%s", err, out)
	}
	t.Logf("kubectl top node:\n%s", out)
	nodes := topRows(t, out, "NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)")
	if len(nodes) != 1 {
		t.Fatalf("kubectl top node: want one node\n%s", out)
	}
	for _, row := range nodes {
		// The node runs the burning pod: its CPU is at least that.
		if cpu := quantity(t, row[0]); cpu.MilliValue() < burnCPU.MilliValue()/2 {
			t.Errorf("kubectl top node: %s CPU while a pod burns %s\n%s", &cpu, &burnCPU, out)
		}
		if mem := quantity(t, row[2]); mem.Value() < 64<<20 {
			t.Errorf("kubectl top node: %s of memory in use\n%s", &mem, out)
		}
	}

	// The API itself: the window is the sampling interval; a pod without
	// metrics is a NotFound Status; a watch is refused.
	body, err := s.client.RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/burn").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pm metricsv1beta1.PodMetrics
	if err := json.Unmarshal(body, &pm); err != nil {
		t.Fatal(err)
	}
	if pm.Kind != "PodMetrics" || pm.Window.Duration < 400*time.Millisecond || pm.Window.Duration > 5*time.Second ||
		len(pm.Containers) != 1 || pm.Labels["app"] != "burn" || time.Since(pm.Timestamp.Time) > time.Minute {
		t.Errorf("PodMetrics of burn: %s", body)
	}
	for path, want := range map[string]string{
		"/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/nope": `"reason":"NotFound"`,
		"/apis/metrics.k8s.io/v1beta1/nodes/nope":                   `"reason":"NotFound"`,
		"/apis/metrics.k8s.io/v1beta1/pods?watch=true":              `"reason":"MethodNotAllowed"`,
		"/apis/metrics.k8s.io/v1beta1/pods?labelSelector=a%20in":    `"reason":"BadRequest"`,
	} {
		resp, err := s.get(path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s, want %s", path, body, want)
		}
	}
}

// topRows reads kubectl top's table: each row's cells after the name, by
// name, checking the header.
func topRows(t *testing.T, out string, header ...string) map[string][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != strings.Join(header, " ") {
		t.Fatalf("kubectl top header %q, want %q\n%s", got, header, out)
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != len(header) {
			t.Fatalf("kubectl top row %q\n%s", l, out)
		}
		rows[f[0]] = f[1:]
	}
	return rows
}

func quantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(strings.TrimSuffix(s, "%"))
	if err != nil {
		t.Fatalf("kubectl top figure %q: %v", s, err)
	}
	return q
}
