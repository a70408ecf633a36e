package kube

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// ValidateCronJob validates a defaulted CronJob being created beyond its
// metadata (the generic create path validates that first): the spec, then
// the name's room for the Jobs' suffix, in kube-apiserver's order.
func ValidateCronJob(cj *batchv1.CronJob) field.ErrorList {
	errs := validateCronJobSpec(&cj.Spec, nil, field.NewPath("spec"))
	if len(cj.Name) > CronJobNameMaxLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name,
			fmt.Sprintf("must be no more than %d characters", CronJobNameMaxLength)))
	}
	return errs
}

// ValidateCronJobUpdate validates an update of a CronJob's spec. A CronJob
// stored with TZ in its schedule may keep it; the name's length is not
// checked again, so that such CronJobs stay editable.
func ValidateCronJobUpdate(cj, old *batchv1.CronJob) field.ErrorList {
	return validateCronJobSpec(&cj.Spec, &old.Spec, field.NewPath("spec"))
}

// validateCronJobSpec is kube's validateCronJobSpec; old is nil on create.
func validateCronJobSpec(spec, old *batchv1.CronJobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Schedule == "" {
		errs = append(errs, field.Required(fld.Child("schedule"), ""))
	} else {
		allowTZ := old != nil && strings.Contains(old.Schedule, "TZ")
		errs = append(errs, validateSchedule(spec.Schedule, allowTZ, spec.TimeZone, fld.Child("schedule"))...)
	}
	if d := spec.StartingDeadlineSeconds; d != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*d, fld.Child("startingDeadlineSeconds"))...)
	}
	// NOTE: an unchanged time zone is not checked again, so that a CronJob
	// whose zone left the tz database can still be edited or deleted.
	if old == nil || !ptr.Equal(old.TimeZone, spec.TimeZone) {
		errs = append(errs, validateTimeZone(spec.TimeZone, fld.Child("timeZone"))...)
	}
	errs = append(errs, validateConcurrencyPolicy(spec.ConcurrencyPolicy, fld.Child("concurrencyPolicy"))...)
	errs = append(errs, validateJobTemplateSpec(&spec.JobTemplate, fld.Child("jobTemplate"))...)
	if l := spec.SuccessfulJobsHistoryLimit; l != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*l), fld.Child("successfulJobsHistoryLimit"))...)
	}
	if l := spec.FailedJobsHistoryLimit; l != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*l), fld.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// validateSchedule parses the schedule as the controller will (the
// parser's own error is kube's message), and refuses TZ or CRON_TZ in it
// in favour of the timeZone field.
func validateSchedule(schedule string, allowTZ bool, timeZone *string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := cron.ParseStandard(schedule); err != nil {
		errs = append(errs, field.Invalid(fld, schedule, err.Error()))
	}
	hasTZ := strings.Contains(schedule, "TZ")
	switch {
	case allowTZ && hasTZ && timeZone != nil:
		errs = append(errs, field.Invalid(fld, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && hasTZ:
		errs = append(errs, field.Invalid(fld, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// timeZoneComponent is one '/'-separated part of a tz database name: the
// IANA naming rules, with digits and '+' tolerated for legacy names.
var timeZoneComponent = regexp.MustCompile(`^[A-Za-z.\-_0-9+]{1,14}$`)

// validateTimeZone requires a time zone, if given, to be a tz database name
// this machine knows ("Local" is refused: it would depend on the node).
func validateTimeZone(tz *string, fld *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(fld, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZoneComponent.MatchString(part) {
			return field.ErrorList{field.Invalid(fld, tz, "unknown time zone "+*tz)}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(fld, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(fld, tz, err.Error()))
	}
	return errs
}

// validateConcurrencyPolicy requires Allow, Forbid or Replace.
func validateConcurrencyPolicy(p batchv1.ConcurrencyPolicy, fld *field.Path) field.ErrorList {
	switch p {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
		return nil
	case "":
		return field.ErrorList{field.Required(fld, "")}
	}
	return field.ErrorList{field.NotSupported(fld, p,
		[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent})}
}

// validateJobTemplateSpec is kube's ValidateJobTemplateSpec: the Job spec
// as a Job's (with spec.jobTemplate.spec… paths), and no selector of its
// own — each Job's is generated.
func validateJobTemplateSpec(tmpl *batchv1.JobTemplateSpec, fld *field.Path) field.ErrorList {
	spec := fld.Child("spec")
	errs := validateJobSpec(&tmpl.Spec, spec)
	if tmpl.Spec.Selector != nil {
		errs = append(errs, field.Invalid(spec.Child("selector"), tmpl.Spec.Selector, "`selector` will be auto-generated"))
	}
	if tmpl.Spec.ManualSelector != nil && *tmpl.Spec.ManualSelector {
		errs = append(errs, field.NotSupported(spec.Child("manualSelector"), tmpl.Spec.ManualSelector, []string{"nil", "false"}))
	}
	return errs
}
