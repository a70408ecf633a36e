package api

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateJob validates a defaulted Job beyond its metadata: the generated
// selector, the spec and the pod template, one error per bad field.
func validateJob(job *batchv1.Job) field.ErrorList {
	errs := validateGeneratedSelector(job)
	errs = append(errs, validateJobSpec(&job.Spec, field.NewPath("spec"))...)
	if isIndexed(&job.Spec) && job.Spec.Completions != nil && *job.Spec.Completions > 0 {
		// NOTE: indexed pods get the hostname <job>-<index>, which must be a
		// DNS label (kube's ValidateJob).
		host := fmt.Sprintf("%s-%d", job.Name, *job.Spec.Completions-1)
		if len(validation.IsDNS1123Label(host)) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), job.Name,
				"will not able to create pod with invalid DNS label: "+host))
		}
	}
	return errs
}

func isIndexed(spec *batchv1.JobSpec) bool {
	return spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
}

// validateGeneratedSelector checks, for a Job whose selector is generated,
// that the template carries the job labels and the selector selects them.
func validateGeneratedSelector(job *batchv1.Job) field.ErrorList {
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return nil
	}
	var errs field.ErrorList
	if job.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	tmpl := field.NewPath("spec", "template", "metadata")
	want := map[string]string{
		legacyControllerUIDLabel:   string(job.UID),
		legacyJobNameLabel:         job.Name,
		batchv1.ControllerUidLabel: string(job.UID),
		batchv1.JobNameLabel:       job.Name,
	}
	for _, k := range []string{legacyControllerUIDLabel, legacyJobNameLabel, batchv1.ControllerUidLabel, batchv1.JobNameLabel} {
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

// validateJobSpec validates a JobSpec with kube-apiserver's messages.
func validateJobSpec(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	counts := []struct {
		name string
		v    *int32
	}{
		{"parallelism", spec.Parallelism}, {"completions", spec.Completions}, {"backoffLimit", spec.BackoffLimit},
		{"backoffLimitPerIndex", spec.BackoffLimitPerIndex}, {"maxFailedIndexes", spec.MaxFailedIndexes},
		{"ttlSecondsAfterFinished", spec.TTLSecondsAfterFinished},
	}
	for _, c := range counts {
		if c.v != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*c.v), fld.Child(c.name))...)
		}
	}
	if d := spec.ActiveDeadlineSeconds; d != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*d, fld.Child("activeDeadlineSeconds"))...)
	}
	errs = append(errs, validateCompletionMode(spec, fld)...)
	errs = append(errs, validateJobSelector(spec, fld)...)
	errs = append(errs, validateJobTemplate(spec, fld.Child("template"))...)
	return errs
}

// validateCompletionMode checks the mode and the fields that need Indexed.
func validateCompletionMode(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.CompletionMode != nil {
		errs = append(errs, supported(fld.Child("completionMode"), string(*spec.CompletionMode),
			batchv1.NonIndexedCompletion, batchv1.IndexedCompletion)...)
	}
	if isIndexed(spec) {
		if spec.Completions == nil {
			errs = append(errs, field.Required(fld.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
		}
		return errs
	}
	if spec.BackoffLimitPerIndex != nil {
		errs = append(errs, field.Invalid(fld.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
	}
	if spec.MaxFailedIndexes != nil {
		errs = append(errs, field.Invalid(fld.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
	}
	if spec.SuccessPolicy != nil {
		errs = append(errs, field.Invalid(fld.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
	}
	return errs
}

// validateJobSelector requires a valid selector that selects the template.
func validateJobSelector(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	if spec.Selector == nil {
		return field.ErrorList{field.Required(fld.Child("selector"), "")}
	}
	errs := metavalidation.ValidateLabelSelector(spec.Selector, metavalidation.LabelSelectorValidationOptions{}, fld.Child("selector"))
	if len(errs) > 0 {
		return errs
	}
	sel, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err == nil && !sel.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(fld.Child("template", "metadata", "labels"), spec.Template.Labels,
			"`selector` does not match template `labels`"))
	}
	return errs
}

// validateJobTemplate validates the pod template; a Job's pods may only
// restart OnFailure or Never.
func validateJobTemplate(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	errs := metavalidation.ValidateLabels(spec.Template.Labels, fld.Child("metadata", "labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(spec.Template.Annotations, fld.Child("metadata", "annotations"))...)
	podSpec := fld.Child("spec")
	for _, e := range validatePodSpec(&spec.Template.Spec, podSpec) {
		if e.Field != podSpec.Child("restartPolicy").String() {
			errs = append(errs, e)
		}
	}
	if rp := spec.Template.Spec.RestartPolicy; rp != "OnFailure" && rp != "Never" {
		errs = append(errs, field.Required(podSpec.Child("restartPolicy"), `valid values: "OnFailure", "Never"`))
	}
	return errs
}

// validateJobUpdate validates an update of a Job: the new Job as on
// create, and the fields kube makes immutable.
func validateJobUpdate(n, o *batchv1.Job) field.ErrorList {
	errs := validateJob(n)
	spec := field.NewPath("spec")
	errs = append(errs, apivalidation.ValidateImmutableField(n.Spec.Selector, o.Spec.Selector, spec.Child("selector"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(n.Spec.ManualSelector, o.Spec.ManualSelector, spec.Child("manualSelector"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(n.Spec.Template, o.Spec.Template, spec.Child("template"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(n.Spec.CompletionMode, o.Spec.CompletionMode, spec.Child("completionMode"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(n.Spec.PodFailurePolicy, o.Spec.PodFailurePolicy, spec.Child("podFailurePolicy"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(n.Spec.BackoffLimitPerIndex, o.Spec.BackoffLimitPerIndex, spec.Child("backoffLimitPerIndex"))...)
	if !isIndexed(&n.Spec) {
		errs = append(errs, apivalidation.ValidateImmutableField(n.Spec.Completions, o.Spec.Completions, spec.Child("completions"))...)
	}
	return errs
}
