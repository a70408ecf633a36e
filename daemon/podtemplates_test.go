//go:build integration

package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodTemplatesLeasesAndSysctls: what the sig-node conformance specs
// showed missing, through a running skiffd — core/v1 PodTemplates
// (defaulted, validated, generation bumped by a template change, listed,
// patched, deleted by collection and with their namespace),
// coordination.k8s.io/v1 Leases, and kube-apiserver's validation of sysctl
// names.
func TestPodTemplatesLeasesAndSysctls(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pts := s.client.CoreV1().PodTemplates("default")

	pt, err := pts.Create(ctx, &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "pt", Labels: map[string]string{"set": "a"}},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35"}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pt.Generation != 1 || pt.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways ||
		pt.Template.Spec.Containers[0].TerminationMessagePath != "/dev/termination-log" {
		t.Errorf("created PodTemplate not defaulted as kube does: generation %d, %+v", pt.Generation, pt.Template.Spec)
	}
	pt, err = pts.Patch(ctx, "pt", types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":"yes"}}}`), metav1.PatchOptions{})
	if err != nil || pt.Generation != 1 || pt.Labels["patched"] != "yes" {
		t.Errorf("label patch: generation %d, labels %v, %v", pt.Generation, pt.Labels, err)
	}
	pt.Template.Spec.Containers[0].Image = "busybox:1.36"
	if pt, err = pts.Update(ctx, pt, metav1.UpdateOptions{}); err != nil || pt.Generation != 2 {
		t.Errorf("template update: generation %d, %v", pt.Generation, err)
	}
	_, err = pts.Create(ctx, &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Template:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}},
	}, metav1.CreateOptions{})
	if want := `PodTemplate "bad" is invalid: template.spec.containers[0].image: Required value`; !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("a PodTemplate without image: %v, want 422 %s", err, want)
	}
	table, err := s.client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/podtemplates").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil || !strings.Contains(string(table), `"cells":["pt","c","busybox:1.36","app=x"]`) {
		t.Errorf("PodTemplate table: %s %v", table, err)
	}
	if err := pts.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "set=a"}); err != nil {
		t.Fatal(err)
	}
	if list, err := pts.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("after deletecollection: %v %v", list, err)
	}

	// A namespace's PodTemplates go with it.
	if _, err := s.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tmpl"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.client.CoreV1().PodTemplates("tmpl").Create(ctx, &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "pt"},
		Template:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.client.CoreV1().Namespaces().Delete(ctx, "tmpl", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "namespace tmpl gone", func() (bool, error) {
		_, err := s.client.CoreV1().Namespaces().Get(ctx, "tmpl", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})

	// Leases: kubectl's table, kube's validation, the fields of a gate off
	// by default dropped.
	leases := s.client.CoordinationV1().Leases("default")
	lease, err := leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "lock"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("me"), LeaseDurationSeconds: ptr(int32(30)),
			Strategy: ptr(coordinationv1.OldestEmulationVersion), PreferredHolder: ptr("you")},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.Strategy != nil || lease.Spec.PreferredHolder != nil || lease.Generation != 0 {
		t.Errorf("created Lease: %+v, generation %d; want strategy and preferredHolder dropped, no generation", lease.Spec, lease.Generation)
	}
	lease.Spec.LeaseTransitions = ptr(int32(-1))
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	if want := `Lease.coordination.k8s.io "lock" is invalid: spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0`; !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("a Lease with negative transitions: %v, want 422 %s", err, want)
	}
	table, err = s.client.CoordinationV1().RESTClient().Get().AbsPath("/apis/coordination.k8s.io/v1/namespaces/default/leases").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil || !strings.Contains(string(table), `"cells":["lock","me","`) {
		t.Errorf("Lease table: %s %v", table, err)
	}
	if err := leases.Delete(ctx, "lock", metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}

	// Sysctls: the names of the conformance spec "should reject invalid
	// sysctls" — two malformed, two well formed (unsafe or unknown ones are
	// the kubelet's to refuse).
	sc := &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
		{Name: "foo-", Value: "bar"}, {Name: "kernel.shmmax", Value: "100000000"},
		{Name: "safe-and-unsafe", Value: "100000000"}, {Name: "bar..", Value: "42"}}}
	_, err = s.client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sysctls"},
		Spec: corev1.PodSpec{SecurityContext: sc,
			Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35"}}},
	}, metav1.CreateOptions{})
	const regex = `must have at most 253 characters and match regex ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`
	want := `Pod "sysctls" is invalid: [spec.securityContext.sysctls[0].name: Invalid value: "foo-": ` + regex +
		`, spec.securityContext.sysctls[3].name: Invalid value: "bar..": ` + regex + `]`
	if !apierrors.IsInvalid(err) || err.Error() != want {
		t.Errorf("pod with invalid sysctls: %v\nwant 422 %s", err, want)
	}
}
