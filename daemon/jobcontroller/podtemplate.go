package jobcontroller

import (
	"maps"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// maxGenerateNameLength is the longest generateName kept whole: a generated
// name adds 5 characters and must stay within 63.
//
// NOTE: kube-apiserver's SimpleNameGenerator truncates the same way.
const maxGenerateNameLength = 58

// newPod is the pod the Job runs (for a completion index, if Indexed): the template's labels, annotations, finalizers and spec, the
// Job as controlling owner, and the tracking finalizer.
//
// NOTE: as Kubernetes' GetPodFromTemplate + the Job controller's additions.
func newPod(job *batchv1.Job, c podToCreate) *corev1.Pod {
	tmpl := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    truncate(job.Name+"-", maxGenerateNameLength),
			Namespace:       job.Namespace,
			Labels:          maps.Clone(tmpl.Labels),
			Annotations:     maps.Clone(tmpl.Annotations),
			Finalizers:      appendTrackingFinalizer(tmpl.Finalizers),
			OwnerReferences: []metav1.OwnerReference{controllerRef(job)},
		},
		Spec: tmpl.Spec,
	}
	if c.index != noIndex {
		addIndex(pod, job, c)
	}
	return pod
}

// controllerRef is the ownerReference a Job's pods carry.
func controllerRef(job *batchv1.Job) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         batchv1.SchemeGroupVersion.String(),
		Kind:               "Job",
		Name:               job.Name,
		UID:                job.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

func appendTrackingFinalizer(finalizers []string) []string {
	for _, f := range finalizers {
		if f == batchv1.JobTrackingFinalizer {
			return finalizers
		}
	}
	return append(finalizers, batchv1.JobTrackingFinalizer)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
