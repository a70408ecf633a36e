//go:build integration

package daemon_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const kubectlJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: greet
spec:
  completions: 2
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox:1.35
        command: ["sh", "-c", "echo hello from $(hostname)"]
`

// TestKubectlSession drives skiffd with the real kubectl as a user would,
// with the README's first Job: each pod on its own address of the pod
// network, named by its hostname.
func TestKubectlSession(t *testing.T) {
	t.Parallel()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is needed for this test:", err)
	}
	s := newSkiffd(t)
	s.start()
	home := t.TempDir()
	manifest := filepath.Join(home, "job.yaml")
	if err := os.WriteFile(manifest, []byte(kubectlJob), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", s.kubeconfig}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out)
	}

	if out := run("create", "-f", manifest); !strings.Contains(out, "job.batch/greet created") {
		t.Errorf("create said %q", out)
	}
	if out := run("wait", "--for=condition=complete", "job/greet", "--timeout=90s"); !strings.Contains(out, "job.batch/greet condition met") {
		t.Errorf("wait said %q", out)
	}
	out := run("get", "jobs")
	if !strings.Contains(out, "STATUS") || !strings.Contains(out, "COMPLETIONS") || !strings.Contains(out, "Complete") || !strings.Contains(out, "2/2") {
		t.Errorf("get jobs:\n%s", out)
	}
	out = run("get", "pods")
	if strings.Count(out, "Completed") != 2 || !strings.Contains(out, "greet-") {
		t.Errorf("get pods:\n%s", out)
	}
	names := strings.Fields(run("get", "pods", "-o", "jsonpath={.items[*].metadata.name}"))
	if out := strings.TrimSpace(run("logs", "job/greet")); len(names) != 2 || (out != "hello from "+names[0] && out != "hello from "+names[1]) {
		t.Errorf("logs job/greet said %q; the pods are %q", out, names)
	}
	_, subnet, _ := net.ParseCIDR(s.subnet)
	node := nodeIP(t, s)
	ips := strings.Fields(run("get", "pods", "-o", "jsonpath={.items[*].status.podIP}"))
	if len(ips) != 2 || ips[0] == ips[1] {
		t.Errorf("pod IPs %q, want two different ones", ips)
	}
	for _, ip := range ips {
		if parsed := net.ParseIP(ip); parsed == nil || !subnet.Contains(parsed) || ip == node {
			t.Errorf("pod IP %s is not of the pod network %s (the node is %s)", ip, s.subnet, node)
		}
	}
	if out := run("delete", "job", "greet"); !strings.Contains(out, `job.batch "greet" deleted`) {
		t.Errorf("delete said %q", out)
	}
	// Background propagation: the pods go shortly after the Job.
	waitFor(t, time.Minute, "the job's pods to be deleted", func() (bool, error) {
		return strings.TrimSpace(run("get", "pods", "-o", "name")) == "", nil
	})
}
