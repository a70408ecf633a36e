package kube

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
)

// PrepareJobForCreate is kube's job strategy on create: no status, the Job
// defaults, and (unless spec.manualSelector) the selector and labels
// generated from the Job's name and UID, which must be final.
func PrepareJobForCreate(job *batchv1.Job) {
	job.Status = batchv1.JobStatus{}
	dropGatedPodSpecFields(&job.Spec.Template.Spec, nil)
	defaultJob(job)
}

// PrepareJobForUpdate keeps the stored status on an update of a Job and
// defaults its spec and labels again.
func PrepareJobForUpdate(job, old *batchv1.Job) {
	job.Status = old.Status
	dropGatedPodSpecFields(&job.Spec.Template.Spec, &old.Spec.Template.Spec)
	defaultJobSpec(&job.Spec)
	defaultJobLabels(job)
}

// PrepareJobForStatusUpdate keeps the stored spec on an update of a Job's
// status.
func PrepareJobForStatusUpdate(job, old *batchv1.Job) { job.Spec = old.Spec }

// JobStrategy is kube-apiserver's create path for a Job written by a
// controller inside its own store transaction (the CronJob controller), so
// that its Jobs get what a Job posted to the API gets.
type JobStrategy struct {
	// NamespaceLifecycle refuses Jobs in a missing or terminating
	// namespace (the admission plugin), as the API does.
	NamespaceLifecycle bool
}

// Create prepares job for storage as the API's create does (its UID must
// be set: the generated selector uses it), validates its metadata and spec,
// and admits it into ns, the Job's namespace as stored in the same
// transaction (nil when it does not exist). The error is kube-apiserver's
// Status error (422 Invalid, 404, 403 with the NamespaceTerminating cause).
func (s JobStrategy) Create(job *batchv1.Job, ns *corev1.Namespace) error {
	PrepareJobForCreate(job)
	errs := ValidateObjectMeta(job, true, apivalidation.NameIsDNSSubdomain)
	if errs = append(errs, ValidateJob(job)...); len(errs) > 0 {
		return apierrors.NewInvalid(batchv1.SchemeGroupVersion.WithKind("Job").GroupKind(), job.Name, errs)
	}
	if !s.NamespaceLifecycle {
		return nil
	}
	return AdmitNamespace(ns, job.Namespace, batchv1.Resource("jobs"), job.Name)
}
