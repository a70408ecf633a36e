//go:build integration

package daemon_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	typedbatchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
)

// otherManager makes the Job controller leave a Job alone (spec.managedBy),
// so that the tests own its status.
const otherManager = "example.com/other-controller"

// TestClientGoWrites: patches of every type, server-side apply, optimistic
// concurrency, the status subresource and dryRun, through client-go.
func TestClientGoWrites(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	tests := map[string]func(t *testing.T, jobs typedbatchv1.JobInterface){
		"patches":                testPatches,
		"server-side apply":      testServerSideApply,
		"optimistic concurrency": testOptimisticConcurrency,
		"status subresource":     testStatusSubresource,
		"dryRun":                 testDryRun,
	}
	for name, test := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, s.client.BatchV1().Jobs("default"))
		})
	}
}

// createJob creates a suspended Job named after the running test.
func createJob(t *testing.T, jobs typedbatchv1.JobInterface, name string) *batchv1.Job {
	t.Helper()
	job, err := jobs.Create(context.Background(), suspendedJob(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

func testPatches(t *testing.T, jobs typedbatchv1.JobInterface) {
	ctx := context.Background()
	created := createJob(t, jobs, "patched")
	steps := []struct {
		name  string
		pt    types.PatchType
		patch string
		check func(*batchv1.Job) string // "" when the patch did what it should
	}{
		{"strategic", types.StrategicMergePatchType, `{"metadata":{"labels":{"a":"1"}},"spec":{"parallelism":2}}`,
			func(j *batchv1.Job) string {
				if j.Labels["a"] != "1" || *j.Spec.Parallelism != 2 || j.Labels["job-name"] != "patched" || len(j.Spec.Template.Spec.Containers) != 1 {
					return "labels or parallelism not merged"
				}
				return ""
			}},
		{"strategic null deletes", types.StrategicMergePatchType, `{"metadata":{"labels":{"a":null}}}`,
			func(j *batchv1.Job) string {
				if _, ok := j.Labels["a"]; ok {
					return "label a kept"
				}
				return ""
			}},
		{"merge", types.MergePatchType, `{"metadata":{"annotations":{"x":"y"}},"spec":{"backoffLimit":3}}`,
			func(j *batchv1.Job) string {
				if j.Annotations["x"] != "y" || j.Annotations[seqAnnotation] != "0" || *j.Spec.BackoffLimit != 3 {
					return "annotations or backoffLimit not merged"
				}
				return ""
			}},
		{"json", types.JSONPatchType, `[{"op":"test","path":"/spec/parallelism","value":2},{"op":"replace","path":"/spec/parallelism","value":3},{"op":"remove","path":"/metadata/annotations/x"}]`,
			func(j *batchv1.Job) string {
				if *j.Spec.Parallelism != 3 || j.Annotations["x"] != "" {
					return "json patch not applied"
				}
				return ""
			}},
	}
	gen := created.Generation
	for _, st := range steps {
		job, err := jobs.Patch(ctx, "patched", st.pt, []byte(st.patch), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("%s patch: %v", st.name, err)
		}
		if msg := st.check(job); msg != "" {
			t.Errorf("%s patch: %s: %+v", st.name, msg, job)
		}
		if job.Generation < gen {
			t.Errorf("%s patch: generation went back to %d", st.name, job.Generation)
		}
		gen = job.Generation
	}
	if gen != created.Generation+3 {
		t.Errorf("generation %d after three spec changes from %d", gen, created.Generation)
	}
	// A JSON patch whose test fails changes nothing: 422 Invalid.
	_, err := jobs.Patch(ctx, "patched", types.JSONPatchType, []byte(`[{"op":"test","path":"/spec/parallelism","value":9},{"op":"replace","path":"/spec/parallelism","value":1}]`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("failing json patch test: %v, want 422 Invalid", err)
	}
}

func testServerSideApply(t *testing.T, jobs typedbatchv1.JobInterface) {
	ctx := context.Background()
	apply := func(manager string, force bool, parallelism int32, label string) (*batchv1.Job, error) {
		cfg := batchv1ac.Job("applied", "default").
			WithLabels(map[string]string{"owner": label}).
			WithSpec(batchv1ac.JobSpec().
				WithParallelism(parallelism).
				WithSuspend(true).
				WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
					WithRestartPolicy(corev1.RestartPolicyNever).
					WithContainers(corev1ac.Container().WithName("main").WithImage("busybox:1.35").WithCommand("true")))))
		return jobs.Apply(ctx, cfg, metav1.ApplyOptions{FieldManager: manager, Force: force})
	}
	job, err := apply("alice", false, 1, "alice")
	if err != nil {
		t.Fatalf("first apply (create): %v", err)
	}
	// NOTE: a Job with labels of its own does not get the template's.
	if *job.Spec.Parallelism != 1 || job.Labels["owner"] != "alice" || job.Spec.Template.Labels["job-name"] != "applied" {
		t.Errorf("created by apply: %+v", job)
	}
	job, err = apply("alice", false, 2, "alice")
	if err != nil {
		t.Fatalf("second apply (change): %v", err)
	}
	if *job.Spec.Parallelism != 2 {
		t.Errorf("parallelism %d after the second apply, want 2", *job.Spec.Parallelism)
	}
	// Another manager setting the same fields conflicts, unless it forces.
	if _, err := apply("bob", false, 3, "bob"); !apierrors.IsConflict(err) {
		t.Errorf("apply by another manager: %v, want 409 Conflict", err)
	}
	job, err = apply("bob", true, 3, "bob")
	if err != nil {
		t.Fatalf("forced apply: %v", err)
	}
	if *job.Spec.Parallelism != 3 || job.Labels["owner"] != "bob" {
		t.Errorf("after the forced apply: parallelism %d, owner %q", *job.Spec.Parallelism, job.Labels["owner"])
	}
	var managers []string
	for _, m := range job.ManagedFields {
		if m.Operation == metav1.ManagedFieldsOperationApply {
			managers = append(managers, m.Manager)
		}
	}
	sort.Strings(managers)
	if !cmp.Equal(managers, []string{"bob"}) && !cmp.Equal(managers, []string{"alice", "bob"}) {
		t.Errorf("apply managers %v, want bob (and alice for what bob took not)", managers)
	}
}

func testOptimisticConcurrency(t *testing.T, jobs typedbatchv1.JobInterface) {
	ctx := context.Background()
	createJob(t, jobs, "concurrent")
	// NOTE: read after the Job controller's first status write.
	var stale *batchv1.Job
	waitFor(t, time.Minute, "the job controller to see the Job", func() (bool, error) {
		j, err := jobs.Get(ctx, "concurrent", metav1.GetOptions{})
		stale = j
		return err == nil && len(j.Status.Conditions) > 0, err
	})
	fresh := stale.DeepCopy()
	fresh.Labels["writer"] = "first"
	if _, err := jobs.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Labels["writer"] = "second"
	_, err := jobs.Update(ctx, stale, metav1.UpdateOptions{})
	if !apierrors.IsConflict(err) {
		t.Fatalf("update from a stale resourceVersion: %v, want 409 Conflict", err)
	}
	const msg = `Operation cannot be fulfilled on jobs.batch "concurrent": the object has been modified; please apply your changes to the latest version and try again`
	if got := err.(apierrors.APIStatus).Status().Message; got != msg {
		t.Errorf("conflict message %q, want %q", got, msg)
	}
	// A patch carrying the stale resourceVersion is refused the same way.
	_, err = jobs.Patch(ctx, "concurrent", types.MergePatchType,
		[]byte(`{"metadata":{"resourceVersion":"`+stale.ResourceVersion+`","labels":{"writer":"third"}}}`), metav1.PatchOptions{})
	if !apierrors.IsConflict(err) {
		t.Errorf("patch with a stale resourceVersion: %v, want 409 Conflict", err)
	}
	got, err := jobs.Get(ctx, "concurrent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["writer"] != "first" {
		t.Errorf("writer label %q, want the first writer's", got.Labels["writer"])
	}
}

func testStatusSubresource(t *testing.T, jobs typedbatchv1.JobInterface) {
	ctx := context.Background()
	job := suspendedJob("status")
	job.Spec.ManagedBy = ptr(otherManager)
	job, err := jobs.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Through /status: the status changes, a spec change is ignored.
	job.Status.Active = 4
	job.Spec.Parallelism = ptr(int32(7))
	out, err := jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status.Active != 4 || *out.Spec.Parallelism != 1 || out.Generation != job.Generation {
		t.Errorf("after UpdateStatus: active %d, parallelism %d, generation %d→%d", out.Status.Active, *out.Spec.Parallelism, job.Generation, out.Generation)
	}
	// Through the object: the spec changes, a status change is ignored.
	out.Status.Active = 9
	out.Spec.Parallelism = ptr(int32(2))
	out, err = jobs.Update(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status.Active != 4 || *out.Spec.Parallelism != 2 || out.Generation != job.Generation+1 {
		t.Errorf("after Update: active %d, parallelism %d, generation %d→%d", out.Status.Active, *out.Spec.Parallelism, job.Generation, out.Generation)
	}
	// A patch of /status.
	out, err = jobs.Patch(ctx, "status", types.MergePatchType, []byte(`{"status":{"active":1,"ready":1}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if out.Status.Active != 1 || out.Status.Ready == nil || *out.Status.Ready != 1 {
		t.Errorf("after the status patch: %+v", out.Status)
	}
}

func testDryRun(t *testing.T, jobs typedbatchv1.JobInterface) {
	ctx := context.Background()
	dry := []string{metav1.DryRunAll}
	out, err := jobs.Create(ctx, suspendedJob("dry"), metav1.CreateOptions{DryRun: dry})
	if err != nil {
		t.Fatal(err)
	}
	if out.UID == "" || out.Labels["job-name"] != "dry" {
		t.Errorf("dry-run create did not default the Job: %+v", out.ObjectMeta)
	}
	if _, err := jobs.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run create stored the Job: %v", err)
	}
	job := suspendedJob("dry")
	job.Spec.ManagedBy = ptr(otherManager) // no controller writes in between
	if job, err = jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored := job.DeepCopy()
	job.Labels["dry"] = "run"
	if out, err := jobs.Update(ctx, job, metav1.UpdateOptions{DryRun: dry}); err != nil || out.Labels["dry"] != "run" {
		t.Errorf("dry-run update: %v %v", err, out.Labels)
	}
	if _, err := jobs.Patch(ctx, "dry", types.MergePatchType, []byte(`{"spec":{"parallelism":5}}`), metav1.PatchOptions{DryRun: dry}); err != nil {
		t.Errorf("dry-run patch: %v", err)
	}
	if err := jobs.Delete(ctx, "dry", metav1.DeleteOptions{DryRun: dry}); err != nil {
		t.Errorf("dry-run delete: %v", err)
	}
	got, err := jobs.Get(ctx, "dry", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after the dry runs: %v", err)
	}
	if diff := cmp.Diff(stored, got); diff != "" {
		t.Errorf("a dry run changed the stored Job (-want,+got):\n%s", diff)
	}
}
