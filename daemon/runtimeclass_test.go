//go:build integration

package daemon_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	containerdclient "github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// TestRuntimeClassAPI: node.k8s.io/v1 RuntimeClasses through a running
// skiffd — create, 409 on a second create, watch, get, list by label,
// patch, update, the handler immutable, kube's validation, kubectl's table,
// delete and deletecollection.
func TestRuntimeClassAPI(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	rcs := s.client.NodeV1().RuntimeClasses()
	sel := metav1.ListOptions{LabelSelector: "test=api"}

	newRC := func(name, handler string) *nodev1.RuntimeClass {
		return &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": "api"}}, Handler: handler}
	}
	created, err := rcs.Create(ctx, newRC("one", "runc"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Generation != 0 || created.UID == "" {
		t.Errorf("created: generation %d uid %q, want no generation (kube's strategy keeps none) and a uid", created.Generation, created.UID)
	}
	if _, err := rcs.Create(ctx, newRC("one", "runc"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want 409", err)
	}
	if _, err := rcs.Create(ctx, newRC("two", "runc"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := rcs.Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := rcs.Create(ctx, newRC("three", "other"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := rcs.List(ctx, sel)
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("list: %v %v, want 3 items", list, err)
	}
	patched, err := rcs.Patch(ctx, "one", types.MergePatchType, []byte(`{"metadata":{"annotations":{"patched":"true"}}}`), metav1.PatchOptions{})
	if err != nil || patched.Annotations["patched"] != "true" {
		t.Fatalf("patch: %v %v", patched, err)
	}
	patched.Annotations["updated"] = "true"
	if _, err := rcs.Update(ctx, patched, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var added, modified int
	for added < 3 || modified < 2 {
		select {
		case ev := <-w.ResultChan():
			if _, ok := ev.Object.(*nodev1.RuntimeClass); !ok {
				t.Fatalf("watch event %s of %T", ev.Type, ev.Object)
			}
			switch ev.Type {
			case watch.Added:
				added++
			case watch.Modified:
				modified++
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("watch: %d added, %d modified; want 3 and 2", added, modified)
		}
	}

	// kube's validation: the handler is a DNS label and immutable;
	// overhead and scheduling are checked.
	one, err := rcs.Get(ctx, "one", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one.Handler = "runsc"
	_, err = rcs.Update(ctx, one, metav1.UpdateOptions{})
	if want := `RuntimeClass.node.k8s.io "one" is invalid: handler: Invalid value: "runsc": field is immutable`; !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("handler change: %v, want 422 %s", err, want)
	}
	bad := newRC("bad", "Not_A_Label")
	bad.Overhead = &nodev1.Overhead{PodFixed: corev1.ResourceList{"cpu": resource.MustParse("-1"), "pods": resource.MustParse("1")}}
	bad.Scheduling = &nodev1.Scheduling{Tolerations: []corev1.Toleration{{Key: "k", Operator: "Exists"}, {Key: "k", Operator: "Exists"}}}
	_, err = rcs.Create(ctx, bad, metav1.CreateOptions{})
	for _, want := range []string{
		`handler: Invalid value: "Not_A_Label": a lowercase RFC 1123 label must consist of`,
		`overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0`,
		`overhead.limits[pods]: Invalid value: "pods": must be a standard resource for containers`,
		`scheduling.tolerations[1]: Duplicate value:`,
	} {
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("invalid RuntimeClass: %v, want 422 with %s", err, want)
		}
	}

	// kubectl apply validates against the group's OpenAPI document first.
	apply := s.kubectlCmd("kubectl", "apply", "-f", "-")
	apply.Stdin = strings.NewReader("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: applied\n  labels: {test: api}\nhandler: runc\noverhead:\n  podFixed: {cpu: 250m}\n")
	if out, err := apply.CombinedOutput(); err != nil || !strings.Contains(string(out), "runtimeclass.node.k8s.io/applied created") {
		t.Errorf("kubectl apply: %v\n%s", err, out)
	}
	out, err := s.kubectlCmd("kubectl", "get", "runtimeclasses", "-l", "test=api").CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^NAME\s+HANDLER\s+AGE\n(.*\n)*three\s+other\s+\d+s$`).MatchString(string(out)) {
		t.Errorf("kubectl get runtimeclasses: %v\n%s", err, out)
	}

	if err := rcs.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rcs.Get(ctx, "one", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want 404", err)
	}
	if err := rcs.DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		t.Fatal(err)
	}
	if list, err := rcs.List(ctx, sel); err != nil || len(list.Items) != 0 {
		t.Errorf("list after deletecollection: %v %v, want none", list, err)
	}
}

// TestRuntimeClassAdmission: kube-apiserver's RuntimeClass admission of
// bare and Job pods through a running skiffd — a missing class refused
// with 403, the class's overhead set (another one refused, one without a
// class refused) and counted in the node's admission of the pod, its
// scheduling merged (a conflict refused).
func TestRuntimeClassAdmission(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")
	overhead := corev1.ResourceList{"cpu": resource.MustParse("10m"), "memory": resource.MustParse("1Mi")}
	if _, err := s.client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sched"}, Handler: "runc",
		Overhead: &nodev1.Overhead{PodFixed: overhead},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
			Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	withClass := func(name, class string) *corev1.Pod {
		p := scriptPod(name, "true")
		p.Spec.RuntimeClassName = &class
		return p
	}

	_, err := pods.Create(ctx, withClass("missing", "nope"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if want := `pods "missing" is forbidden: pod rejected: RuntimeClass "nope" not found`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("pod naming a missing class: %v, want 403 %s", err, want)
	}

	p := withClass("admitted", "sched")
	p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	got, err := pods.Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Spec.Overhead.Cpu().Equal(resource.MustParse("10m")) || !got.Spec.Overhead.Memory().Equal(resource.MustParse("1Mi")) ||
		got.Spec.NodeSelector["disk"] != "ssd" || got.Spec.NodeSelector["kubernetes.io/os"] != "linux" ||
		len(got.Spec.Tolerations) == 0 || got.Spec.Tolerations[len(got.Spec.Tolerations)-1].Key != "gpu" {
		t.Errorf("admitted pod: overhead %v, nodeSelector %v, tolerations %v; want the class's merged in",
			got.Spec.Overhead, got.Spec.NodeSelector, got.Spec.Tolerations)
	}

	p = withClass("conflict", "sched")
	p.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "windows"}
	_, err = pods.Create(ctx, p, metav1.CreateOptions{})
	if want := `pods "conflict" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[kubernetes.io/os] = linux; pod.spec.nodeSelector[kubernetes.io/os] = windows`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("conflicting nodeSelector: %v, want 403 %s", err, want)
	}
	p = withClass("other-overhead", "sched")
	p.Spec.Overhead = corev1.ResourceList{"cpu": resource.MustParse("1")}
	_, err = pods.Create(ctx, p, metav1.CreateOptions{})
	if want := `pods "other-overhead" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("pod with another overhead: %v, want 403 %s", err, want)
	}
	p = scriptPod("classless-overhead", "true")
	p.Spec.Overhead = overhead
	_, err = pods.Create(ctx, p, metav1.CreateOptions{})
	if want := `pods "classless-overhead" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("pod with overhead and no class: %v, want 403 %s", err, want)
	}

	// The overhead counts in the node's admission of the pod's requests: a
	// pod asking for nothing but whose class costs a thousand CPUs waits
	// unscheduled.
	if _, err := s.client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "huge"}, Handler: "runc",
		Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{"cpu": resource.MustParse("1000")}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, withClass("costly", "huge"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "pod costly to wait for cpu", func() (bool, error) {
		p, err := pods.Get(ctx, "costly", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "Insufficient cpu") {
				return p.Status.Phase == corev1.PodPending, nil
			}
		}
		return false, nil
	})

	// A Job's pods go through the same admission: a missing class is the
	// Job controller's FailedCreate event.
	job := shJob("classy", "true", 1, 1, 0, corev1.RestartPolicyNever)
	job.Spec.Template.Spec.RuntimeClassName = ptr("gone")
	if _, err := s.client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the Job's FailedCreate event", func() (bool, error) {
		evs, err := s.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=classy,reason=FailedCreate"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if strings.Contains(e.Message, `pod rejected: RuntimeClass "gone" not found`) {
				return true, nil
			}
		}
		return false, nil
	})
}

// TestRuntimeClassHandlers: a class's handler picks the containerd runtime
// of its pods, through a running skiffd — "runc" and a handler configured
// with --runtime-handler run their pods with the runtime they map to (read
// back from containerd), a handler mapped to a runtime that is not
// installed fails the pod instead of falling back to runc, and an
// unconfigured handler leaves the pod Pending with the kubelet's
// FailedCreatePodSandBox event and status; a pod whose class is deleted
// keeps its runtime across a kill -9 of skiffd.
func TestRuntimeClassHandlers(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--runtime-handler", "fast=io.containerd.runc.v2", "--runtime-handler", "absent=io.containerd.absent.v1")
	s.start()
	ctx := context.Background()
	for name, handler := range map[string]string{"runc": "runc", "fast": "fast", "absent": "absent", "unconfigured": "unconfigured"} {
		if _, err := s.client.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: handler},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := s.client.CoreV1().Pods("default")
	for _, class := range []string{"runc", "fast", "absent", "unconfigured"} {
		p := scriptPod("with-"+class, "exec sleep 3600")
		p.Spec.RuntimeClassName = &class
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	crashy := scriptPod("crashy", "sleep 1; exit 1")
	crashy.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	crashy.Spec.RuntimeClassName = ptr("fast")
	if _, err := pods.Create(ctx, crashy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, class := range []string{"runc", "fast"} {
		waitFor(t, 90*time.Second, "pod with-"+class+" to run", func() (bool, error) {
			p, err := pods.Get(ctx, "with-"+class, metav1.GetOptions{})
			if err == nil && p.Status.Phase == corev1.PodFailed {
				t.Fatalf("pod with-%s failed: %+v", class, p.Status)
			}
			return err == nil && p.Status.Phase == corev1.PodRunning, err
		})
	}
	// NOTE: containerd cannot start the shim of a runtime that is not
	// installed; skiff retries, as after any failure to start a shim. The
	// shim's name in the event (containerd-shim-absent-v1, from the runtime
	// io.containerd.absent.v1) shows which runtime the container was given;
	// the container itself lives only from its creation to the removal of
	// its failed start, too briefly to be looked up reliably.
	waitFor(t, 90*time.Second, "pod with-absent's event about its missing shim", func() (bool, error) {
		evs, err := s.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=with-absent"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "containerd-shim-absent-v1") {
				return true, nil
			}
		}
		return false, nil
	})
	if p, err := pods.Get(ctx, "with-absent", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodPending {
		t.Errorf("pod of a handler whose runtime is not installed: %+v %v, want it Pending (never run with runc)", p.Status, err)
	}
	runtimes := containerRuntimes(t, s)
	for pod, want := range map[string]string{"with-runc": "io.containerd.runc.v2", "with-fast": "io.containerd.runc.v2"} {
		if got := runtimes[pod]; got != want {
			t.Errorf("containerd runtime of %s's container: %q, want %q (all: %v)", pod, got, want, runtimes)
		}
	}

	// A pod whose class goes away keeps the runtime it started with, also
	// across a kill -9 of skiffd: its container goes on being restarted.
	if err := s.client.NodeV1().RuntimeClasses().Delete(ctx, "fast", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.kill()
	s.start()
	restarts := func() int32 {
		p, err := pods.Get(ctx, "crashy", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return -1
		}
		return p.Status.ContainerStatuses[0].RestartCount
	}
	before := restarts()
	waitFor(t, 90*time.Second, "crashy to be restarted after skiffd's restart", func() (bool, error) {
		return restarts() >= before+2, nil
	})
	if p, err := pods.Get(ctx, "with-fast", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("with-fast after its class was deleted and skiffd restarted: %v %v, want it running", p.Status, err)
	}

	msg := `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "unconfigured" is configured`
	waitEvent(t, s.client, "with-unconfigured", corev1.EventTypeWarning, "FailedCreatePodSandBox", msg)
	p, err := pods.Get(ctx, "with-unconfigured", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodPending || !waitingAs(p, "ContainerCreating", msg) {
		t.Errorf("pod with an unconfigured handler: %+v, want Pending, its container waiting in ContainerCreating with %q", p.Status, msg)
	}
	if _, ok := runtimes["with-unconfigured"]; ok {
		t.Errorf("pod with an unconfigured handler has a container: %v", runtimes)
	}
}

// containerRuntimes are the containerd runtimes of the containers of s's
// pods, by pod name.
func containerRuntimes(t *testing.T, s *skiffd) map[string]string {
	t.Helper()
	client, err := containerdclient.New(s.cd.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := namespaces.WithNamespace(context.Background(), s.namespace())
	cs, err := client.Containers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range cs {
		info, err := c.Info(ctx, containerdclient.WithoutRefreshedMetadata)
		if errdefs.IsNotFound(err) {
			continue // removed since the list
		}
		if err != nil {
			t.Fatal(err)
		}
		out[info.Labels["io.skiff.pod.name"]] = info.Runtime.Name
	}
	return out
}
