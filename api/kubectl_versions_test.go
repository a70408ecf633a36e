package api

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kubectlVersions are the kubectl releases installed beside /usr/bin/kubectl.
var kubectlVersions = []string{"1.27", "1.28", "1.29", "1.30", "1.31", "1.32", "1.33"}

// TestKubectlVersions runs the request machinery's part of a session with
// every installed kubectl: discovery, create, client-side and server-side
// apply twice with a change, get with pages, patch, delete.
func TestKubectlVersions(t *testing.T) {
	for _, v := range kubectlVersions {
		t.Run(v, func(t *testing.T) {
			bin := "/usr/lib/google-cloud-sdk/bin/kubectl." + v
			if _, err := os.Stat(bin); err != nil {
				t.Fatalf("kubectl %s not installed: %v", v, err)
			}
			ts := newTestServer(t)
			run := func(stdin string, args ...string) string {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				base := []string{"--server=" + ts.URL, "--cache-dir=" + ts.cacheDir(t), "--kubeconfig=" + ts.kubeconfig(t)}
				cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
				cmd.Stdin = strings.NewReader(stdin)
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Run(); err != nil {
					t.Fatalf("kubectl %s %v: %v\n%s", v, args, err, out.String())
				}
				return out.String()
			}
			csa := strings.Replace(jobYAML, "name: pi", "name: csa", 1)
			ssa := strings.Replace(jobYAML, "name: pi", "name: ssa", 1)
			more := func(y string) string {
				return strings.Replace(y, "spec:\n  template:", "spec:\n  parallelism: 2\n  template:", 1)
			}
			wantLines(t, run(jobYAML, "create", "-f", "-"), "job.batch/pi created")
			wantLines(t, run(csa, "apply", "-f", "-"), "job.batch/csa created")
			wantLines(t, run(more(csa), "apply", "-f", "-"), "job.batch/csa configured")
			wantLines(t, run(ssa, "apply", "--server-side", "-f", "-"), "job.batch/ssa serverside-applied")
			wantLines(t, run(more(ssa), "apply", "--server-side", "-f", "-"), "job.batch/ssa serverside-applied")
			wantLines(t, run("", "get", "jobs", "--chunk-size=1"), "NAME STATUS COMPLETIONS", "csa", "pi", "ssa")
			wantLines(t, run("", "get", "jobs", "-l", "job-name in (csa,ssa)", "-o", "name"), "job.batch/csa", "job.batch/ssa")
			wantLines(t, run("", "patch", "job", "pi", "--type=merge", "-p", `{"metadata":{"labels":{"x":"y"}}}`), "job.batch/pi patched")
			wantLines(t, run("", "delete", "jobs", "--all"), `job.batch "csa" deleted`, `job.batch "pi" deleted`, `job.batch "ssa" deleted`)
		})
	}
}
