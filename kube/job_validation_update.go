package kube

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateJobUpdate validates an update of a Job (its spec; the generic
// update path validates the metadata): the new Job as on create, then the
// spec again with the fields kube makes immutable.
//
// NOTE: kube's job strategy runs ValidateJob and then ValidateJobUpdate,
// and both validate the spec, so an invalid spec is reported twice in the
// causes (the Status message lists it once: field.ErrorList.ToAggregate
// drops repeats). This keeps that shape.
func ValidateJobUpdate(n, o *batchv1.Job) field.ErrorList {
	opts := updateOptions(o)
	errs := validateJobWith(n, opts)
	return append(errs, validateJobSpecUpdate(&n.Spec, &o.Spec, field.NewPath("spec"), opts)...)
}

// updateOptions are kube's validation options for an update of old.
func updateOptions(old *batchv1.Job) jobValidationOptions {
	_, hadName := old.Spec.Template.Labels[batchv1.JobNameLabel]
	_, hadUID := old.Spec.Template.Labels[batchv1.ControllerUidLabel]
	return jobValidationOptions{
		requirePrefixedLabels:            hadName && hadUID,
		allowInvalidLabelValueInSelector: metavalidation.LabelSelectorHasInvalidLabelValue(old.Spec.Selector),
		// NOTE: kube lets a Job that is suspended and never started change
		// where its pods will run (for queueing controllers such as Kueue).
		allowMutableSchedulingDirectives: old.Spec.Suspend != nil && *old.Spec.Suspend && old.Status.StartTime == nil,
	}
}

// validateJobSpecUpdate is kube's ValidateJobSpecUpdate: the spec, and the
// immutable fields in kube's order.
func validateJobSpecUpdate(spec, old *batchv1.JobSpec, fld *field.Path, opts jobValidationOptions) field.ErrorList {
	errs := validateJobSpecAndSelector(spec, fld, opts)
	errs = append(errs, validateCompletionsUpdate(spec, old, fld.Child("completions"))...)
	errs = append(errs, validateImmutable(spec.Selector, old.Selector, fld.Child("selector"))...)
	errs = append(errs, validateTemplateUpdate(spec, old, fld.Child("template"), opts)...)
	errs = append(errs, validateImmutable(spec.CompletionMode, old.CompletionMode, fld.Child("completionMode"))...)
	errs = append(errs, validateImmutable(spec.PodFailurePolicy, old.PodFailurePolicy, fld.Child("podFailurePolicy"))...)
	errs = append(errs, validateImmutable(spec.BackoffLimitPerIndex, old.BackoffLimitPerIndex, fld.Child("backoffLimitPerIndex"))...)
	errs = append(errs, validateImmutable(spec.ManagedBy, old.ManagedBy, fld.Child("managedBy"))...)
	return append(errs, validateImmutable(spec.SuccessPolicy, old.SuccessPolicy, fld.Child("successPolicy"))...)
}

// validateImmutable reports newVal as kube's "field is immutable" when it
// differs semantically from oldVal.
func validateImmutable(newVal, oldVal any, fld *field.Path) field.ErrorList {
	if equality.Semantic.DeepEqual(oldVal, newVal) {
		return nil
	}
	return field.ErrorList{field.Invalid(fld, kubeValue(newVal), apivalidation.FieldImmutableErrorMsg)}
}

// validateCompletionsUpdate keeps completions immutable, except that an
// Indexed job may change them together with parallelism to the same value
// (elastic Indexed jobs).
func validateCompletionsUpdate(spec, old *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	if !IsIndexedJob(spec) {
		return validateImmutable(spec.Completions, old.Completions, fld)
	}
	// NOTE: dropping completions from an Indexed job is already reported
	// as required by the spec validation.
	if equality.Semantic.DeepEqual(spec.Completions, old.Completions) || spec.Completions == nil {
		return nil
	}
	if spec.Parallelism == nil || *spec.Completions != *spec.Parallelism {
		return field.ErrorList{field.Invalid(fld, spec.Completions,
			fmt.Sprintf("can only be modified in tandem with %s", fld.Root().Child("parallelism")))}
	}
	return nil
}

// validateTemplateUpdate keeps the pod template immutable, except for its
// scheduling directives, labels and annotations when opts allow them.
func validateTemplateUpdate(spec, old *batchv1.JobSpec, fld *field.Path, opts jobValidationOptions) field.ErrorList {
	oldTmpl := &old.Template
	if opts.allowMutableSchedulingDirectives {
		oldTmpl = old.Template.DeepCopy()
		acceptSchedulingChanges(oldTmpl, &spec.Template)
	}
	return validateImmutable(&spec.Template, oldTmpl, fld)
}

// acceptSchedulingChanges copies into old the parts of tmpl a suspended,
// never started Job may change: node affinity, node selector, tolerations,
// scheduling gates, labels and annotations.
func acceptSchedulingChanges(old, tmpl *corev1.PodTemplateSpec) {
	switch {
	case tmpl.Spec.Affinity == nil && old.Spec.Affinity != nil:
		// Clearing the affinity is allowed if it held only node affinity.
		old.Spec.Affinity.NodeAffinity = nil
		if *old.Spec.Affinity == (corev1.Affinity{}) {
			old.Spec.Affinity = nil
		}
	case tmpl.Spec.Affinity != nil && old.Spec.Affinity == nil:
		old.Spec.Affinity = &corev1.Affinity{NodeAffinity: tmpl.Spec.Affinity.NodeAffinity}
	case tmpl.Spec.Affinity != nil && old.Spec.Affinity != nil:
		old.Spec.Affinity.NodeAffinity = tmpl.Spec.Affinity.NodeAffinity
	}
	old.Spec.NodeSelector = tmpl.Spec.NodeSelector
	old.Spec.Tolerations = tmpl.Spec.Tolerations
	old.Spec.SchedulingGates = tmpl.Spec.SchedulingGates
	old.Labels = tmpl.Labels
	old.Annotations = tmpl.Annotations
}
