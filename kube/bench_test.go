package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkPodStrategyCreate is the cost the pod create strategy adds to
// each pod a writer creates (the Job controller creates up to 500 a sync):
// defaults, validation of metadata and spec, namespace admission.
func BenchmarkPodStrategyCreate(b *testing.B) {
	s := PodStrategy{NodeName: "node-a", NamespaceLifecycle: true}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	template := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job-a-x7k2p", GenerateName: "job-a-", Namespace: "default",
			Labels:     map[string]string{"batch.kubernetes.io/job-name": "job-a", "job-name": "job-a"},
			Finalizers: []string{"batch.kubernetes.io/job-tracking"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "main", Image: "busybox:1.35", Command: []string{"sh", "-c", "true"},
			Resources: corev1.ResourceRequirements{Requests: rl("cpu", "10m", "memory", "16Mi")}}}},
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Create(template.DeepCopy(), ns, PodRefs{}); err != nil {
			b.Fatal(err)
		}
	}
}
