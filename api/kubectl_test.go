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

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
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

// requireKubectl fails when kubectl is missing: the test exists to prove
// kubectl works.
func requireKubectl(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(kubectlPath); err != nil {
		t.Fatalf("kubectl not installed at %s: %v", kubectlPath, err)
	}
}

// mustKubectl runs kubectl and fails the test if it fails.
func (ts *testServer) mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := ts.kubectl(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
	return out
}

// wantLines fails unless every want is a substring of some line of out,
// with its fields separated by any whitespace.
func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l, w)
		}
		if !found {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestKubectl(t *testing.T) {
	requireKubectl(t)
	ts := newTestServer(t)

	wantLines(t, ts.mustKubectl(t, jobYAML, "create", "-f", "-"), "job.batch/pi created")
	wantLines(t, ts.mustKubectl(t, "", "get", "jobs"),
		"NAME STATUS COMPLETIONS DURATION AGE", "pi Running 0/1")
	wantLines(t, ts.mustKubectl(t, "", "get", "jobs", "-o", "wide"),
		"NAME STATUS COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR", "c busybox:1.35 batch.kubernetes.io/controller-uid=")
	wantLines(t, ts.mustKubectl(t, "", "get", "job", "pi", "-o", "yaml"),
		"apiVersion: batch/v1", "kind: Job", "backoffLimit: 6", "batch.kubernetes.io/job-name: pi")

	// A pod of the job, as the controller and the pod agent would leave it.
	job, err := ts.store.Get(db.Jobs, "default", "pi")
	if err != nil {
		t.Fatal(err)
	}
	pod := finishedPod(job.(*batchv1.Job))
	if err := ts.store.Create(db.Pods, pod); err != nil {
		t.Fatal(err)
	}
	ts.appendLog(t, pod, "c", 0, "hi")
	wantLines(t, ts.mustKubectl(t, "", "get", "pods"), "NAME READY STATUS RESTARTS AGE", "pi-abcde 0/1 Completed 0")
	wantLines(t, ts.mustKubectl(t, "", "get", "pods", "-o", "wide"), "IP NODE NOMINATED NODE READINESS GATES", "node-a <none> <none>")
	wantLines(t, ts.mustKubectl(t, "", "logs", "job/pi"), "hi")
	wantLines(t, ts.mustKubectl(t, "", "describe", "job", "pi"), "Name: pi", "Completion Mode: NonIndexed", "Backoff Limit: 6")
	wantLines(t, ts.mustKubectl(t, "", "describe", "pod", "pi-abcde"), "Name: pi-abcde", "Status: Succeeded")
	wantLines(t, ts.mustKubectl(t, "", "explain", "job.spec"), "KIND: Job", "FIELD: spec <JobSpec>", "backoffLimit <integer>")
	wantLines(t, ts.mustKubectl(t, "", "explain", "pod.spec.containers.image"), "FIELD: image <string>")
	wantLines(t, ts.mustKubectl(t, "", "explain", "--output=plaintext-openapiv2", "job.spec.completions"), "FIELD: completions <integer>")

	// get -w: the table, then a watch whose events come as one-row tables.
	watched := make(chan string)
	go func() {
		out, _ := ts.kubectl(t, "", "get", "jobs", "-w", "--request-timeout=3s")
		watched <- out
	}()
	ts.waitWatch(t, "/jobs?", "resourceVersion=")
	if _, err := ts.store.Modify(db.Jobs, "default", "pi", func(obj db.Object) error {
		obj.(*batchv1.Job).Spec.Completions = ptrTo(int32(2))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantLines(t, <-watched, "NAME STATUS COMPLETIONS DURATION AGE", "pi Running 0/1", "pi Running 0/2")

	// wait: list + watch with a field selector; the condition is written
	// into the store as the Job controller would, once the watch is open.
	done := make(chan string)
	go func() {
		out, err := ts.kubectl(t, "", "wait", "--for=condition=complete", "job/pi", "--timeout=30s")
		if err != nil {
			out += "\nerror: " + err.Error()
		}
		done <- out
	}()
	ts.waitWatch(t, "fieldSelector=metadata.name%3Dpi", "allowWatchBookmarks=true")
	if _, err := ts.store.Modify(db.Jobs, "default", "pi", func(obj db.Object) error {
		j := obj.(*batchv1.Job)
		j.Spec.Completions = ptrTo(int32(1))
		j.Status.Succeeded = 1
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantLines(t, <-done, "job.batch/pi condition met")
	wantLines(t, ts.mustKubectl(t, "", "get", "jobs"), "pi Complete 1/1")

	// apply: create, unchanged, configured.
	applied := strings.Replace(jobYAML, "name: pi", "name: ap", 1)
	wantLines(t, ts.mustKubectl(t, applied, "apply", "-f", "-"), "job.batch/ap created")
	wantLines(t, ts.mustKubectl(t, applied, "apply", "-f", "-"), "job.batch/ap unchanged")
	changed := strings.Replace(applied, "spec:\n  template:", "spec:\n  parallelism: 2\n  template:", 1)
	wantLines(t, ts.mustKubectl(t, changed, "apply", "-f", "-"), "job.batch/ap configured")
	if j, err := ts.store.Get(db.Jobs, "default", "ap"); err != nil || *j.(*batchv1.Job).Spec.Parallelism != 2 {
		t.Errorf("apply did not change parallelism: %v", err)
	}

	// apply --server-side: create, unchanged, changed; twice in a row.
	ssa := strings.Replace(jobYAML, "name: pi", "name: ssa", 1)
	for range 2 {
		wantLines(t, ts.mustKubectl(t, ssa, "apply", "--server-side", "-f", "-"), "job.batch/ssa serverside-applied")
	}
	ssa = strings.Replace(ssa, "spec:\n  template:", "spec:\n  parallelism: 3\n  template:", 1)
	for range 2 {
		wantLines(t, ts.mustKubectl(t, ssa, "apply", "--server-side", "-f", "-"), "job.batch/ssa serverside-applied")
	}
	if j, err := ts.store.Get(db.Jobs, "default", "ssa"); err != nil || *j.(*batchv1.Job).Spec.Parallelism != 3 {
		t.Errorf("apply --server-side did not change parallelism: %v", err)
	}
	// Another manager's different value conflicts until forced.
	other := strings.Replace(ssa, "parallelism: 3", "parallelism: 4", 1)
	out, err := ts.kubectl(t, other, "apply", "--server-side", "--field-manager=other", "-f", "-")
	if err == nil {
		t.Errorf("a conflicting apply succeeded:\n%s", out)
	}
	wantLines(t, out, `Apply failed with 1 conflict: conflict with "kubectl": .spec.parallelism`)
	wantLines(t, ts.mustKubectl(t, other, "apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-"),
		"job.batch/ssa serverside-applied")
	wantLines(t, ts.mustKubectl(t, "", "get", "job", "ssa", "--show-managed-fields", "-o", "yaml"), "manager: other", "operation: Apply")
	// A client-side applied object moves to server-side apply.
	wantLines(t, ts.mustKubectl(t, changed, "apply", "--server-side", "-f", "-"), "job.batch/ap serverside-applied")
	wantLines(t, ts.mustKubectl(t, changed, "apply", "-f", "-"), "job.batch/ap")

	// Server-side field validation reaches kubectl's user.
	out, err = ts.kubectl(t, strings.Replace(jobYAML, "name: pi", "name: bad\n  foo: 1", 1), "create", "-f", "-")
	if err == nil {
		t.Errorf("create with an unknown field succeeded:\n%s", out)
	}
	wantLines(t, out, `strict decoding error: unknown field "metadata.foo"`)

	// Typed clients send protobuf bodies.
	wantLines(t, ts.mustKubectl(t, "", "create", "job", "cj", "--image=busybox:1.35", "--", "true"), "job.batch/cj created")
	wantLines(t, ts.mustKubectl(t, "", "get", "jobs", "-l", "job-name=cj", "-o", "name"), "job.batch/cj")
	wantLines(t, ts.mustKubectl(t, "", "delete", "job", "cj", "--cascade=foreground", "--wait=false"), `job.batch "cj" deleted`)
	wantLines(t, ts.mustKubectl(t, "", "get", "job", "cj"), "cj Terminating 0/1")

	wantLines(t, ts.mustKubectl(t, "", "delete", "job", "pi"), `job.batch "pi" deleted`)
	if _, err := ts.store.Get(db.Jobs, "default", "pi"); err == nil {
		t.Errorf("job still stored after delete")
	}
}

// finishedPod is a succeeded pod of job, named pi-abcde.
func finishedPod(job *batchv1.Job) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pi-abcde", Namespace: "default", Labels: job.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID,
				Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}}},
		Spec: func() corev1.PodSpec {
			spec := *job.Spec.Template.Spec.DeepCopy()
			spec.NodeName = "node-a"
			return spec
		}(),
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "c", Image: "busybox:1.35",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", ContainerID: "containerd://pi-c"}},
		}}},
	}
}
