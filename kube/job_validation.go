package kube

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of kube-apiserver's Job validation (pkg/apis/batch/validation).
const (
	maxParallelismForIndexedJob             = 100_000
	maxFailedIndexesForIndexedJob           = 100_000
	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000
	maxManagedByLength                      = 63
)

// jobValidationOptions are the switches kube's job strategy derives from
// the request (create, or update of a given old Job).
type jobValidationOptions struct {
	// requirePrefixedLabels requires the batch.kubernetes.io/ job labels
	// on the template of a Job with a generated selector.
	requirePrefixedLabels bool
	// allowInvalidLabelValueInSelector keeps accepting a selector that was
	// stored before label values were validated in selectors.
	allowInvalidLabelValueInSelector bool
	// allowMutableSchedulingDirectives lets an update change the template's
	// scheduling directives, labels and annotations.
	allowMutableSchedulingDirectives bool
}

// createOptions are the options for a Job being created.
var createOptions = jobValidationOptions{requirePrefixedLabels: true}

// ValidateJob validates a defaulted Job being created beyond its metadata
// (the generic create path validates that first), with kube-apiserver's
// field paths, reasons, messages and order.
func ValidateJob(job *batchv1.Job) field.ErrorList {
	return validateJobWith(job, createOptions)
}

// validateJobWith is kube's ValidateJob without the metadata: the generated
// selector, the spec, and the hostname of the last index.
func validateJobWith(job *batchv1.Job, opts jobValidationOptions) field.ErrorList {
	errs := validateGeneratedSelector(job, opts.requirePrefixedLabels)
	errs = append(errs, validateJobSpecAndSelector(&job.Spec, field.NewPath("spec"), opts)...)
	return append(errs, validateIndexedHostname(job)...)
}

// validateIndexedHostname checks that indexed pods can be named: they get
// the hostname <job>-<index>, which must be a DNS label.
func validateIndexedHostname(job *batchv1.Job) field.ErrorList {
	if !IsIndexedJob(&job.Spec) || job.Spec.Completions == nil || *job.Spec.Completions <= 0 {
		return nil
	}
	host := fmt.Sprintf("%s-%d", job.Name, *job.Spec.Completions-1)
	if len(validation.IsDNS1123Label(host)) == 0 {
		return nil
	}
	// NOTE: "will not able to" is kube-apiserver's wording.
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), job.Name,
		"will not able to create pod with invalid DNS label: "+host)}
}

// validateGeneratedSelector checks, for a Job whose selector is generated,
// that the template carries the job labels and the selector selects them.
func validateGeneratedSelector(job *batchv1.Job, prefixedLabels bool) field.ErrorList {
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector || job.Spec.Selector == nil {
		return nil
	}
	var errs field.ErrorList
	if job.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	want := map[string]string{legacyControllerUIDLabel: string(job.UID), legacyJobNameLabel: job.Name}
	keys := []string{legacyControllerUIDLabel, legacyJobNameLabel}
	if prefixedLabels {
		want[batchv1.ControllerUidLabel], want[batchv1.JobNameLabel] = string(job.UID), job.Name
		keys = append(keys, batchv1.ControllerUidLabel, batchv1.JobNameLabel)
	}
	tmpl := field.NewPath("spec", "template", "metadata")
	for _, k := range keys {
		errs = append(errs, validateHasLabel(job.Spec.Template.Labels, tmpl, k, want[k])...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !sel.Matches(labels.Set(want)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateHasLabel requires the label key=value in m.
func validateHasLabel(m map[string]string, fld *field.Path, key, value string) field.ErrorList {
	got, ok := m[key]
	switch {
	case !ok:
		return field.ErrorList{field.Required(fld.Child("labels").Key(key), fmt.Sprintf("must be '%s'", value))}
	case got != value:
		return field.ErrorList{field.Invalid(fld.Child("labels").Key(key), m, fmt.Sprintf("must be '%s'", value))}
	}
	return nil
}

// validateJobSpecAndSelector is kube's ValidateJobSpec: the spec, then a
// valid selector that selects the template's labels.
func validateJobSpecAndSelector(spec *batchv1.JobSpec, fld *field.Path, opts jobValidationOptions) field.ErrorList {
	errs := validateJobSpec(spec, fld)
	if spec.Selector == nil {
		errs = append(errs, field.Required(fld.Child("selector"), ""))
	} else {
		selOpts := metavalidation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.allowInvalidLabelValueInSelector}
		errs = append(errs, metavalidation.ValidateLabelSelector(spec.Selector, selOpts, fld.Child("selector"))...)
	}
	// NOTE: a nil selector selects nothing, so kube reports the mismatch too.
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(fld.Child("template", "metadata", "labels"), spec.Template.Labels,
			"`selector` does not match template `labels`"))
	}
	return errs
}

// validateJobSpec validates a JobSpec in kube's order: counts, managedBy,
// completion mode, the policies, the pod template and its restart policy.
func validateJobSpec(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	errs := validateJobCounts(spec, fld)
	if spec.ManagedBy != nil {
		errs = append(errs, validateManagedBy(*spec.ManagedBy, fld.Child("managedBy"))...)
	}
	errs = append(errs, validateCompletionMode(spec, fld)...)
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, fld.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if IsIndexedJob(spec) {
			errs = append(errs, validateSuccessPolicy(spec, fld.Child("successPolicy"))...)
		} else {
			errs = append(errs, field.Invalid(fld.Child("successPolicy"), kubeValue(*spec.SuccessPolicy), "requires indexed completion mode"))
		}
	}
	errs = append(errs, validatePodReplacementPolicy(spec, fld.Child("podReplacementPolicy"))...)
	errs = append(errs, validatePodTemplateSpec(&spec.Template, fld.Child("template"))...)
	return append(errs, validateJobRestartPolicy(spec, fld.Child("template", "spec", "restartPolicy"))...)
}

// validateJobCounts requires the counts to be non-negative, and
// backoffLimitPerIndex with maxFailedIndexes.
func validateJobCounts(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	nonNegative := func(name string, v *int32) {
		if v != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*v), fld.Child(name))...)
		}
	}
	nonNegative("parallelism", spec.Parallelism)
	nonNegative("completions", spec.Completions)
	if d := spec.ActiveDeadlineSeconds; d != nil {
		// NOTE: kube accepts 0 here (the pod-level field needs >= 1).
		errs = append(errs, apivalidation.ValidateNonnegativeField(*d, fld.Child("activeDeadlineSeconds"))...)
	}
	nonNegative("backoffLimit", spec.BackoffLimit)
	nonNegative("ttlSecondsAfterFinished", spec.TTLSecondsAfterFinished)
	nonNegative("backoffLimitPerIndex", spec.BackoffLimitPerIndex)
	nonNegative("maxFailedIndexes", spec.MaxFailedIndexes)
	if spec.MaxFailedIndexes != nil && spec.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(fld.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	return errs
}

// validateManagedBy requires a domain-prefixed path of at most 63 bytes.
func validateManagedBy(v string, fld *field.Path) field.ErrorList {
	errs := validation.IsDomainPrefixedPath(fld, v)
	if len(v) > maxManagedByLength {
		errs = append(errs, field.TooLong(fld, v, maxManagedByLength))
	}
	return errs
}

// validateCompletionMode checks the mode, the limits of Indexed jobs and
// the fields that need Indexed.
func validateCompletionMode(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m := spec.CompletionMode; m != nil {
		if *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
			errs = append(errs, field.NotSupported(fld.Child("completionMode"), m,
				[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
		if *m == batchv1.IndexedCompletion {
			errs = append(errs, validateIndexedLimits(spec, fld)...)
		}
	}
	if spec.CompletionMode == nil || *spec.CompletionMode == batchv1.NonIndexedCompletion {
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(fld.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(fld.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	return errs
}

// validateIndexedLimits bounds an Indexed job: completions required,
// parallelism and maxFailedIndexes capped, tighter caps above 10^5
// completions with per-index backoff.
func validateIndexedLimits(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	c, p, mfi := spec.Completions, spec.Parallelism, spec.MaxFailedIndexes
	if c == nil {
		errs = append(errs, field.Required(fld.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if p != nil && *p > maxParallelismForIndexedJob {
		errs = append(errs, field.Invalid(fld.Child("parallelism"), *p,
			fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
	}
	if c != nil && mfi != nil && *mfi > *c {
		errs = append(errs, field.Invalid(fld.Child("maxFailedIndexes"), *mfi, "must be less than or equal to completions"))
	}
	if mfi != nil && *mfi > maxFailedIndexesForIndexedJob {
		errs = append(errs, field.Invalid(fld.Child("maxFailedIndexes"), *mfi,
			fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
	}
	if c == nil || *c <= completionsSoftLimit || spec.BackoffLimitPerIndex == nil {
		return errs
	}
	high := fmt.Sprintf("when completions are above %d and used with backoff limit per index", completionsSoftLimit)
	if mfi == nil {
		errs = append(errs, field.Required(fld.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
	}
	if p != nil && *p > parallelismLimitForHighCompletions {
		errs = append(errs, field.Invalid(fld.Child("parallelism"), *p,
			fmt.Sprintf("must be less than or equal to %d %s", parallelismLimitForHighCompletions, high)))
	}
	if mfi != nil && *mfi > maxFailedIndexesLimitForHighCompletions {
		errs = append(errs, field.Invalid(fld.Child("maxFailedIndexes"), *mfi,
			fmt.Sprintf("must be less than or equal to %d %s", maxFailedIndexesLimitForHighCompletions, high)))
	}
	return errs
}

// validatePodTemplateSpec is kube's ValidatePodTemplateSpec, for a Job's
// template and a PodTemplate's (its labels and annotations are reported
// under <fld>.labels and <fld>.annotations, as kube does).
func validatePodTemplateSpec(tmpl *corev1.PodTemplateSpec, fld *field.Path) field.ErrorList {
	errs := metavalidation.ValidateLabels(tmpl.Labels, fld.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(tmpl.Annotations, fld.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&tmpl.Spec, nil, fld.Child("spec"))...)
	if len(tmpl.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(fld.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// validateJobRestartPolicy allows OnFailure and Never, and only Never with
// a podFailurePolicy.
func validateJobRestartPolicy(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	rp := spec.Template.Spec.RestartPolicy
	switch {
	case rp == corev1.RestartPolicyAlways || rp == "":
		// NOTE: an unset restartPolicy is defaulted to Always before this,
		// hence kube's Required for a value that is present.
		return field.ErrorList{field.Required(fld, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever))}
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		return field.ErrorList{field.NotSupported(fld, rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		return field.ErrorList{field.Invalid(fld, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever))}
	}
	return nil
}
