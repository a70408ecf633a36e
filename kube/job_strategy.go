package kube

import batchv1 "k8s.io/api/batch/v1"

// PrepareJobForCreate is kube's job strategy on create: no status, the Job
// defaults, and (unless spec.manualSelector) the selector and labels
// generated from the Job's name and UID, which must be final.
func PrepareJobForCreate(job *batchv1.Job) {
	job.Status = batchv1.JobStatus{}
	defaultJob(job)
}

// PrepareJobForUpdate keeps the stored status on an update of a Job and
// defaults its spec and labels again.
func PrepareJobForUpdate(job, old *batchv1.Job) {
	job.Status = old.Status
	defaultJobSpec(&job.Spec)
	defaultJobLabels(job)
}

// PrepareJobForStatusUpdate keeps the stored spec on an update of a Job's
// status.
func PrepareJobForStatusUpdate(job, old *batchv1.Job) { job.Spec = old.Spec }
