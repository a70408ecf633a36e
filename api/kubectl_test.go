package api

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kubectlPath is the real kubectl the tests drive.
const kubectlPath = "/usr/bin/kubectl"

// kubectl runs kubectl against ts with a private cache dir; stdin may be "".
func (ts *testServer) kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--server=" + ts.URL, "--cache-dir=" + ts.cacheDir(t), "--kubeconfig=" + ts.kubeconfig(t)}
	cmd := exec.CommandContext(ctx, kubectlPath, append(base, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (ts *testServer) cacheDir(t *testing.T) string {
	dir := filepath.Join(filepath.Dir(ts.logRoot), "kube-cache")
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// kubeconfig is an empty kubeconfig, so that the user's own is not read.
func (ts *testServer) kubeconfig(t *testing.T) string {
	path := filepath.Join(filepath.Dir(ts.logRoot), "kubeconfig")
	if _, err := os.Stat(path); err != nil {
		if err := os.WriteFile(path, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

const jobYAML = `apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox:1.35
        command: ["sh", "-c", "echo hi"]
`

func TestKubectlExplore(t *testing.T) {
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Skip("no kubectl")
	}
	ts := newTestServer(t)
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{jobYAML, []string{"create", "-f", "-", "-v=6"}},
		{"", []string{"get", "jobs"}},
		{"", []string{"get", "jobs", "-o", "wide"}},
		{"", []string{"explain", "job.spec"}},
		{jobYAML, []string{"apply", "-f", "-"}},
		{jobYAML, []string{"apply", "-f", "-"}},
		{"", []string{"describe", "job", "pi"}},
		{"", []string{"delete", "job", "pi"}},
	} {
		out, err := ts.kubectl(t, c.stdin, c.args...)
		t.Logf("kubectl %v → err=%v\n%s", c.args, err, out)
	}
}
