package jobcontroller

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func podFailurePolicyFailJob(job *batchv1.Job, pods []*corev1.Pod) (string, bool) { return "", false }
func countsAsFailure(job *batchv1.Job, p *corev1.Pod) bool                        { return true }
