package kube

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// IsJobConditionTrue reports whether conds has a condition of type t with
// status True.
func IsJobConditionTrue(conds []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// JobFinishedCondition is the Job's terminal condition, Complete or Failed
// with status True; nil while the Job has not finished (kube's
// IsJobFinished, which the Job and TTL-after-finished controllers share).
func JobFinishedCondition(job *batchv1.Job) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// IsJobFinished reports whether the Job has its terminal condition: no
// controller acts on it any more.
func IsJobFinished(job *batchv1.Job) bool { return JobFinishedCondition(job) != nil }

// IsIndexedJob reports whether the Job's completionMode is Indexed.
func IsIndexedJob(spec *batchv1.JobSpec) bool {
	return spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
}
