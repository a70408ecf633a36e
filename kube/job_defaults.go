package kube

import (
	"maps"
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Labels that predate the batch.kubernetes.io prefix; kube still sets both.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// defaultJob applies kube-apiserver's defaults to a Job being created; its
// name and UID must be final (the generated selector and labels use them).
func defaultJob(job *batchv1.Job) {
	defaultJobSpec(&job.Spec)
	if job.Spec.ManualSelector == nil || !*job.Spec.ManualSelector {
		generateJobSelector(job)
	}
	defaultJobLabels(job)
}

// defaultJobLabels gives a Job without labels its template's labels (create
// and update).
//
// NOTE: kube's SetDefaults_Job does this on every decode, including the
// read back from storage after the selector was generated, so a created
// Job carries the four generated labels, and an update that drops all of a
// Job's labels gets the template's back.
func defaultJobLabels(job *batchv1.Job) {
	if len(job.Labels) == 0 && job.Spec.Template.Labels != nil {
		job.Labels = maps.Clone(job.Spec.Template.Labels)
	}
}

// defaultJobSpec applies the JobSpec defaults (create and update).
func defaultJobSpec(spec *batchv1.JobSpec) {
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = ptr.To(int32(1))
	}
	if spec.Parallelism == nil {
		spec.Parallelism = ptr.To(int32(1))
	}
	if spec.BackoffLimit == nil {
		spec.BackoffLimit = ptr.To(int32(6))
		if spec.BackoffLimitPerIndex != nil {
			spec.BackoffLimit = ptr.To(int32(math.MaxInt32))
		}
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = ptr.To(false)
	}
	defaultPodFailurePolicy(spec.PodFailurePolicy)
	if spec.PodReplacementPolicy == nil {
		spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		}
	}
	defaultPodSpec(&spec.Template.Spec)
}

// defaultPodFailurePolicy sets status "True" on onPodConditions patterns
// that have none.
func defaultPodFailurePolicy(p *batchv1.PodFailurePolicy) {
	if p == nil {
		return
	}
	for i := range p.Rules {
		for j := range p.Rules[i].OnPodConditions {
			if p.Rules[i].OnPodConditions[j].Status == "" {
				p.Rules[i].OnPodConditions[j].Status = corev1.ConditionTrue
			}
		}
	}
}

// generateJobSelector selects the Job's pods by its UID and puts the four
// job labels on its template, leaving labels the user set (a conflict is
// then reported by validation).
func generateJobSelector(job *batchv1.Job) {
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	want := map[string]string{
		legacyJobNameLabel:         job.Name,
		batchv1.JobNameLabel:       job.Name,
		legacyControllerUIDLabel:   string(job.UID),
		batchv1.ControllerUidLabel: string(job.UID),
	}
	for k, v := range want {
		if _, ok := job.Spec.Template.Labels[k]; !ok {
			job.Spec.Template.Labels[k] = v
		}
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(job.UID)
	}
}
