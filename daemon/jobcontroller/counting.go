package jobcontroller

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
)

// podSet is one sync's snapshot of a Job's tracked pods (every pod not yet
// both finished and counted), classified once.
type podSet struct {
	all         []*corev1.Pod
	active      []*corev1.Pod // neither finished nor being deleted
	terminating int32         // being deleted, not finished yet
	ready       int32         // active with Ready=True
}

func classifyPods(pods []*corev1.Pod) podSet {
	s := podSet{all: pods}
	for _, p := range pods {
		switch {
		case kube.IsPodTerminal(p):
		case p.DeletionTimestamp != nil:
			s.terminating++
		default:
			s.active = append(s.active, p)
			if kube.IsPodReady(p) {
				s.ready++
			}
		}
	}
	return s
}

// hasTrackingFinalizer reports whether the pod's outcome is not counted yet.
func hasTrackingFinalizer(p *corev1.Pod) bool {
	for _, f := range p.Finalizers {
		if f == batchv1.JobTrackingFinalizer {
			return true
		}
	}
	return false
}

// withoutTrackingFinalizer returns finalizers without the Job's one.
func withoutTrackingFinalizer(finalizers []string) []string {
	var out []string
	for _, f := range finalizers {
		if f != batchv1.JobTrackingFinalizer {
			out = append(out, f)
		}
	}
	return out
}

// isPodFailed reports whether the pod counts as failed: phase Failed, or,
// unless only failed pods are replaced, deleted before it succeeded.
//
// NOTE: as Kubernetes' isPodFailed: a pod deleted while running counts as a
// failure at once under podReplacementPolicy TerminatingOrFailed.
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// onlyReplaceFailedPods reports whether replacements wait until a deleted
// pod is terminal (podReplacementPolicy Failed, implied by a podFailurePolicy).
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	if job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batchv1.Failed {
		return true
	}
	return job.Spec.PodFailurePolicy != nil
}

// newlyFinished returns the tracked pods whose outcome is not counted yet:
// those succeeded and those considered failed. For Indexed Jobs, pods
// without a valid index are left out.
func newlyFinished(job *batchv1.Job, pods []*corev1.Pod) (succeeded, failed []*corev1.Pod) {
	for _, p := range pods {
		if !hasTrackingFinalizer(p) || !hasValidIndex(job, p) {
			continue
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded:
			succeeded = append(succeeded, p)
		case isPodFailed(p, job):
			failed = append(failed, p)
		}
	}
	return succeeded, failed
}

// countedFailures is how many of the failed pods count toward the backoff
// limit: those not matched by an Ignore rule of the podFailurePolicy.
func countedFailures(job *batchv1.Job, failed []*corev1.Pod) int32 {
	var n int32
	for _, p := range failed {
		if countsAsFailure(job, p) {
			n++
		}
	}
	return n
}
