//go:build integration

package daemon_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubectlRunner runs kubectl against a skiffd, failing the test on error.
type kubectlRunner struct {
	t          *testing.T
	kubectl    string
	kubeconfig string
	home       string
}

func newKubectl(t *testing.T, s *skiffd) *kubectlRunner {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("kubectl is needed for this test:", err)
	}
	return &kubectlRunner{t: t, kubectl: kubectl, kubeconfig: s.kubeconfig, home: t.TempDir()}
}

func (k *kubectlRunner) run(args ...string) string {
	k.t.Helper()
	out, err := k.try(args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (k *kubectlRunner) try(args ...string) (string, error) {
	cmd := exec.Command(k.kubectl, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+k.home, "KUBECONFIG="+filepath.Join(k.home, "none"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// containsAll reports the first of parts missing from s, "" if none is.
func missing(s string, parts ...string) string {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return p
		}
	}
	return ""
}

// TestKubectlEventsNodesNamespaces: describe shows the controllers' and the
// kubelet's events, the node is listed and described, namespaces are
// created, used and deleted with what they hold.
func TestKubectlEventsNodesNamespaces(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	k := newKubectl(t, s)

	// Namespaces.
	out := k.run("get", "namespaces")
	if m := missing(out, "NAME", "STATUS", "AGE", "default", "kube-system", "kube-public", "Active"); m != "" {
		t.Errorf("get namespaces lacks %q:\n%s", m, out)
	}
	if out := k.run("create", "namespace", "team"); !strings.Contains(out, "namespace/team created") {
		t.Errorf("create namespace said %q", out)
	}
	if out, err := k.try("create", "job", "pi", "-n", "nowhere", "--image=busybox:1.35", "--", "true"); err == nil ||
		!strings.Contains(out, `namespaces "nowhere" not found`) {
		t.Errorf("a job in a missing namespace: %v %s", err, out)
	}

	// A Job: its events and its pod's.
	k.run("create", "job", "pi", "-n", "team", "--image=busybox:1.35", "--", "sh", "-c", "echo done")
	k.run("wait", "-n", "team", "--for=condition=complete", "job/pi", "--timeout=90s")
	waitFor(t, 30*time.Second, "the Job's events", func() (bool, error) {
		out = k.run("describe", "job", "pi", "-n", "team")
		return missing(out, "Events:", "SuccessfulCreate", "Created pod: pi-", "Completed", "Job completed", "job-controller") == "", nil
	})
	pod := strings.TrimPrefix(strings.TrimSpace(k.run("get", "pods", "-n", "team", "-o", "name")), "pod/")
	waitFor(t, 30*time.Second, "the pod's events", func() (bool, error) {
		out = k.run("describe", "pod", pod, "-n", "team")
		return missing(out, "Scheduled", "Successfully assigned team/"+pod+" to ", "default-scheduler",
			"Pulled", `Container image "busybox:1.35" already present on machine`,
			"Created", "Created container: pi", "Started", "Started container pi", "kubelet") == "", nil
	})
	out = k.run("get", "events", "-n", "team")
	if m := missing(out, "LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE", "job/pi", "pod/"+pod); m != "" {
		t.Errorf("get events lacks %q:\n%s", m, out)
	}
	out = k.run("get", "events", "-n", "team", "--field-selector", "involvedObject.kind=Job")
	if strings.Contains(out, "pod/") || !strings.Contains(out, "job/pi") {
		t.Errorf("get events of the Job:\n%s", out)
	}

	// The node.
	out = k.run("get", "nodes")
	if m := missing(out, "NAME", "STATUS", "ROLES", "AGE", "VERSION", "Ready", "<none>", "v1.34"); m != "" {
		t.Errorf("get nodes lacks %q:\n%s", m, out)
	}
	out = k.run("get", "nodes", "-o", "wide")
	if m := missing(out, "INTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME", "containerd://"); m != "" {
		t.Errorf("get nodes -o wide lacks %q:\n%s", m, out)
	}
	node := strings.TrimPrefix(strings.TrimSpace(k.run("get", "nodes", "-o", "name")), "node/")
	out = k.run("describe", "node", node)
	if m := missing(out, "Capacity:", "Allocatable:", "System Info:", "Kernel Version:", "Container Runtime Version:",
		"KubeletReady", "kubelet is posting ready status", "InternalIP:", "Non-terminated Pods:"); m != "" {
		t.Errorf("describe node lacks %q:\n%s", m, out)
	}
	waitFor(t, 30*time.Second, "the node's events", func() (bool, error) {
		out = k.run("describe", "node", node)
		return missing(out, "Starting kubelet.", "Node "+node+" status is now: NodeReady",
			"RegisteredNode", "Registered Node "+node+" in Controller", "node-controller") == "", nil
	})

	// Deleting the namespace deletes what it holds, then the namespace.
	if out := k.run("delete", "namespace", "team", "--timeout=60s"); !strings.Contains(out, `namespace "team" deleted`) {
		t.Errorf("delete namespace said %q", out)
	}
	if out, err := k.try("get", "namespace", "team"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("namespace after deletion: %v %s", err, out)
	}
	if out := k.run("get", "jobs,pods,events", "-n", "team", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("left in the deleted namespace:\n%s", out)
	}
	if out, err := k.try("delete", "namespace", "default"); err == nil || !strings.Contains(out, "may not be deleted") {
		t.Errorf("deleting default: %v %s", err, out)
	}
}
