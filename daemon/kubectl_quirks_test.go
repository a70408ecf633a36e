//go:build integration

package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubectlAttachExitedEphemeral: attaching to an ephemeral container
// that has exited is refused with the kubelet's words as each client sees
// them through kube-apiserver — translated onto the error channel for
// kubectl 1.32's WebSocket, the kubelet's plain 500 for kubectl 1.27's SPDY
// — and kubectl debug, whose container exits at once, ends with its output
// and no server error.
func TestKubectlAttachExitedEphemeral(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	pod := runningJobPod(t, s, "sleeper", corev1.Container{Command: []string{"sleep", "3600"}})
	addEphemeral(t, s, pod, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "dbg", Image: "busybox:1.35", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		Command: []string{"sh", "-c", "echo gone; exit 3"},
	}})
	ephemeralStatus(t, s, pod, "dbg", "terminated", func(cs corev1.ContainerStatus) bool { return cs.State.Terminated != nil })
	refusal := "unable to upgrade connection: container dbg not found in pod " + pod.Name + "_default"
	for name, tc := range map[string]struct{ bin, want string }{
		"1.32 WebSocket": {kubectlVersions["1.32"].path, "error: Internal error occurred: " + refusal + "\n"},
		"1.27 SPDY":      {kubectlVersions["1.27"].path, "error: " + refusal + "\n"},
	} {
		t.Run(name, func(t *testing.T) {
			k := newStreamKubectl(t, tc.bin, s)
			_, errOut, code := k.run("", "attach", pod.Name, "-c", "dbg")
			if code != 1 || !strings.HasSuffix(errOut, tc.want) {
				t.Errorf("kubectl attach to the exited container: exit %d\n%s\nwant exit 1 and %q", code, errOut, tc.want)
			}
		})
	}

	// The debug container exits at once: kubectl sees it ended and shows
	// its log, or attaches while it still runs (and gets what it writes
	// from then on, as a kubelet's attach does), or finds it gone when it
	// attaches and, warned with the kubelet's words, shows its log. Or the
	// attach's output and status come before kubectl 1.32 has made its
	// WebSocket streams: it discards them ("Unknown stream id"), says the
	// streams closed, and shows the log (client-go's race, seen once in
	// CI; the server has sent all it had).
	k := newStreamKubectl(t, "kubectl", s)
	out, errOut, code := k.run("", "debug", "-i", pod.Name, "--image=busybox:1.35", "-c", "quick", "--", "sh", "-c", "echo from quick; exit 3")
	fellBack := "warning: couldn't attach to pod/" + pod.Name + ", falling back to streaming logs: "
	refused := strings.Contains(errOut, "unable to upgrade connection: container quick not found in pod "+pod.Name+"_default")
	raced := strings.Contains(errOut, fellBack+"closed all streams")
	switch {
	case code != 0 || strings.Contains(errOut, "Error from server"):
		t.Errorf("kubectl debug of a container that exits at once: exit %d\n%s\n%s", code, out, errOut)
	case strings.Contains(errOut, fellBack) && (!refused && !raced || out != "from quick\n"):
		t.Errorf("kubectl debug fell back to the log with another refusal or output:\n%s\n%s", out, errOut)
	}
}

// mixedManifest holds a kind skiff does not serve (a custom resource) and a
// Job.
const mixedManifest = `apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-new-cron-object
spec:
  cronSpec: "* * * * */5"
---
apiVersion: batch/v1
kind: Job
metadata:
  name: JOB
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox:1.35
        command: ["true"]
`

// TestKubectlApplyUnknownKind: kubectl apply (client- and server-side) and
// create of a file holding a custom resource and a Job write the Job and
// report the other kind as a cluster without its CRD does, exiting 1, with
// kubectl 1.27 to 1.33.
func TestKubectlApplyUnknownKind(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	dir := t.TempDir()
	for _, v := range []string{"1.27", "1.30", "1.32", "1.33"} {
		for _, cmd := range [][]string{{"apply"}, {"apply", "--server-side"}, {"create"}} {
			job := "job-" + strings.ReplaceAll(v, ".", "-") + "-" + strings.TrimPrefix(strings.Join(cmd, ""), "apply--")
			file := filepath.Join(dir, job+".yaml")
			if err := os.WriteFile(file, []byte(strings.Replace(mixedManifest, "JOB", job, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			k := newStreamKubectl(t, kubectlVersions[v].path, s)
			_, errOut, code := k.run("", append(cmd, "-f", file)...)
			want := `resource mapping not found for name: "my-new-cron-object" namespace: "" from "` + file +
				`": no matches for kind "CronTab" in version "stable.example.com/v1"` + "\nensure CRDs are installed first\n"
			if code != 1 || !strings.Contains(errOut, want) {
				t.Errorf("kubectl %s %v: exit %d\n%s\nwant exit 1 and %q", v, cmd, code, errOut, want)
			}
			if _, err := s.client.BatchV1().Jobs("default").Get(context.Background(), job, metav1.GetOptions{}); err != nil {
				t.Errorf("kubectl %s %v: the Job of the file: %v", v, cmd, err)
			}
		}
	}
}

// TestKubectlClusterInfo: kubectl cluster-info names skiffd's address as
// the control plane's, and cluster-info dump writes what skiff holds — the
// node, the pods and their logs, the kinds skiff never holds as empty lists.
func TestKubectlClusterInfo(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	pod := runningJobPod(t, s, "talker", corev1.Container{Command: []string{"sh", "-c", "echo said once; exec sleep 3600"}})
	k := newStreamKubectl(t, "kubectl", s)
	out := k.mustRun("", "cluster-info")
	if want := "Kubernetes control plane is running at " + s.url("") + "\n"; !strings.HasPrefix(out, want) {
		t.Errorf("kubectl cluster-info:\n%s\nwant it to start with %q", out, want)
	}
	dir := t.TempDir()
	k.mustRun("", "cluster-info", "dump", "--output-directory", dir)
	for file, want := range map[string]string{
		"nodes.json":                           `"kind": "NodeList"`,
		"default/pods.json":                    `"name": "` + pod.Name + `"`,
		"default/" + pod.Name + "/logs.txt":    "said once",
		"default/deployments.json":             `"kind": "DeploymentList"`,
		"default/replication-controllers.json": `"items": []`,
		"kube-system/events.json":              `"kind": "EventList"`,
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("cluster-info dump's %s: %v\n%s\nwant it to hold %s", file, err, b, want)
		}
	}
}
