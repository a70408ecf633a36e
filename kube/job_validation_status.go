package kube

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateJobStatusUpdate is kube's ValidateJobStatusUpdate with the options
// its job status strategy chooses (JobManagedBy on, as in 1.34): the counters
// are non-negative and never decrease, the index sets parse and stay below
// completions, the conditions keep their terminal pairs, and finished Jobs
// carry a consistent status.
//
// NOTE: most rules apply only when the fields they read change, as kube's
// getStatusValidationOptions does, so that a status left invalid by a spec
// change (completions scaled down) does not block unrelated status writes.
func ValidateJobStatusUpdate(job, old *batchv1.Job) field.ErrorList {
	fld := field.NewPath("status")
	st, ost := &job.Status, &old.Status
	ch := jobStatusChanges(job, old)

	errs := validateJobStatusCounters(st, fld)
	errs = append(errs, validateUncounted(st.UncountedTerminatedPods, fld.Child("uncountedTerminatedPods"))...)
	complete, failed := jobConditionTrue(job, batchv1.JobComplete), jobConditionTrue(job, batchv1.JobFailed)
	failureTarget, successMet := jobConditionTrue(job, batchv1.JobFailureTarget), jobConditionTrue(job, batchv1.JobSuccessCriteriaMet)
	finished := complete || failed
	conds := fld.Child("conditions")
	invalidConds := func(msg string) *field.Error { return field.Invalid(conds, field.OmitValueType{}, msg) }

	if (ch.complete || ch.failed) && complete && failed {
		errs = append(errs, invalidConds("cannot set Complete=True and Failed=true conditions"))
	}
	if (ch.complete || ch.failureTarget) && complete && failureTarget {
		errs = append(errs, invalidConds("cannot set Complete=True and FailureTarget=true conditions"))
	}
	if (ch.complete || ch.completionTime) && st.CompletionTime != nil && !complete {
		errs = append(errs, field.Invalid(fld.Child("completionTime"), st.CompletionTime, "cannot set completionTime when there is no Complete=True condition"))
	}
	if (ch.complete || ch.completionTime) && st.CompletionTime == nil && complete {
		errs = append(errs, field.Required(fld.Child("completionTime"), "completionTime is required for Complete jobs"))
	}
	if (ch.startTime || ch.completionTime) && st.StartTime != nil && st.CompletionTime != nil && st.CompletionTime.Before(st.StartTime) {
		errs = append(errs, field.Invalid(fld.Child("completionTime"), st.CompletionTime, "must be equal to or after `startTime`"))
	}
	if (ch.failed || ch.failedIndexes) && failed && !failureTarget {
		errs = append(errs, invalidConds("cannot set Failed=True condition without the FailureTarget=true condition"))
	}
	if (ch.complete || ch.successMet) && complete && !successMet {
		errs = append(errs, invalidConds("cannot set Complete=True condition without the SuccessCriteriaMet=true condition"))
	}
	if (ch.finished || ch.active) && st.Active > 0 && finished {
		errs = append(errs, field.Invalid(fld.Child("active"), st.Active, "active>0 is invalid for finished job"))
	}
	suspendedWithZeroCompletions := job.Spec.Suspend != nil && *job.Spec.Suspend && job.Spec.Completions != nil && *job.Spec.Completions == 0
	if (ch.finished || ch.startTime) && !suspendedWithZeroCompletions && st.StartTime == nil && finished {
		errs = append(errs, field.Required(fld.Child("startTime"), "startTime is required for finished job"))
	}
	if u := st.UncountedTerminatedPods; (ch.finished || ch.uncounted) && finished && u != nil && len(u.Failed)+len(u.Succeeded) > 0 {
		errs = append(errs, field.Invalid(fld.Child("uncountedTerminatedPods"), kubeValue(u), "must be empty for finished job"))
	}
	errs = append(errs, validateJobStatusIndexes(job, fld, ch)...)
	if (ch.finished || ch.terminating) && st.Terminating != nil && *st.Terminating > 0 && finished {
		errs = append(errs, field.Invalid(fld.Child("terminating"), st.Terminating, "terminating>0 is invalid for finished job"))
	}
	if (ch.ready || ch.active) && st.Ready != nil && *st.Ready > st.Active {
		errs = append(errs, field.Invalid(fld.Child("ready"), *st.Ready, "cannot set more ready pods than active"))
	}
	if successMet && failed {
		errs = append(errs, invalidConds("cannot set SuccessCriteriaMet=True and Failed=true conditions"))
	}
	if successMet && failureTarget {
		errs = append(errs, invalidConds("cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"))
	}
	if job.Spec.SuccessPolicy != nil && !successMet && complete {
		errs = append(errs, invalidConds("cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"))
	}
	return append(errs, validateJobStatusTransition(job, old, fld, ost)...)
}

// validateJobStatusCounters: every counter is non-negative.
func validateJobStatusCounters(st *batchv1.JobStatus, fld *field.Path) field.ErrorList {
	errs := apivalidation.ValidateNonnegativeField(int64(st.Active), fld.Child("active"))
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(st.Succeeded), fld.Child("succeeded"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(st.Failed), fld.Child("failed"))...)
	if st.Ready != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*st.Ready), fld.Child("ready"))...)
	}
	if st.Terminating != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*st.Terminating), fld.Child("terminating"))...)
	}
	return errs
}

// validateUncounted: the uncounted pod UIDs are non-empty and listed once
// across both lists.
func validateUncounted(u *batchv1.UncountedTerminatedPods, fld *field.Path) field.ErrorList {
	if u == nil {
		return nil
	}
	var errs field.ErrorList
	seen := map[types.UID]bool{}
	for _, list := range []struct {
		name string
		uids []types.UID
	}{{"succeeded", u.Succeeded}, {"failed", u.Failed}} {
		for i, uid := range list.uids {
			p := fld.Child(list.name).Index(i)
			switch {
			case uid == "":
				errs = append(errs, field.Invalid(p, uid, "must not be empty"))
			case seen[uid]:
				errs = append(errs, field.Duplicate(p, uid))
			default:
				seen[uid] = true
			}
		}
	}
	return errs
}

// validateJobStatusIndexes checks completedIndexes and failedIndexes: their
// format and bounds, that they belong to the Job's mode, and that they do
// not overlap.
func validateJobStatusIndexes(job *batchv1.Job, fld *field.Path, ch jobStatusChange) field.ErrorList {
	var errs field.ErrorList
	st, completions := &job.Status, job.Spec.Completions
	if ch.completedIndexes && completions != nil {
		if err := validIndexSet(st.CompletedIndexes, *completions); err != nil {
			errs = append(errs, field.Invalid(fld.Child("completedIndexes"), st.CompletedIndexes, "error parsing completedIndexes: "+err.Error()))
		}
	}
	if ch.failedIndexes && completions != nil && job.Spec.BackoffLimitPerIndex != nil && st.FailedIndexes != nil {
		if err := validIndexSet(*st.FailedIndexes, *completions); err != nil {
			errs = append(errs, field.Invalid(fld.Child("failedIndexes"), st.FailedIndexes, "error parsing failedIndexes: "+err.Error()))
		}
	}
	if ch.completedIndexes && st.CompletedIndexes != "" && !IsIndexedJob(&job.Spec) {
		errs = append(errs, field.Invalid(fld.Child("completedIndexes"), st.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode"))
	}
	if ch.failedIndexes && job.Spec.BackoffLimitPerIndex == nil && st.FailedIndexes != nil {
		errs = append(errs, field.Invalid(fld.Child("failedIndexes"), *st.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
	}
	if (ch.failedIndexes || ch.completedIndexes) && completions != nil && st.FailedIndexes != nil {
		if at, ok := indexSetsOverlap(st.CompletedIndexes, *st.FailedIndexes, *completions); ok {
			errs = append(errs, field.Invalid(fld.Child("failedIndexes"), *st.FailedIndexes, fmt.Sprintf("failedIndexes and completedIndexes overlap at index: %d", at)))
		}
	}
	return errs
}

// validateJobStatusTransition: what a status update may not undo — a
// terminal condition, a counter (succeeded may shrink only for an Indexed
// Job scaled down with parallelism = completions), completionTime, the
// startTime of a running Job, SuccessCriteriaMet.
func validateJobStatusTransition(job, old *batchv1.Job, fld *field.Path, ost *batchv1.JobStatus) field.ErrorList {
	var errs field.ErrorList
	st := &job.Status
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
		if jobConditionTrue(old, t) && !jobConditionTrue(job, t) {
			errs = append(errs, field.Invalid(fld.Child("conditions"), field.OmitValueType{}, fmt.Sprintf("cannot disable the terminal %s=True condition", t)))
		}
	}
	if st.Failed < ost.Failed {
		errs = append(errs, field.Invalid(fld.Child("failed"), st.Failed, "cannot decrease the failed counter"))
	}
	scalable := IsIndexedJob(&job.Spec) && equality.Semantic.DeepEqual(job.Spec.Completions, job.Spec.Parallelism)
	if !scalable && st.Succeeded < ost.Succeeded {
		errs = append(errs, field.Invalid(fld.Child("succeeded"), st.Succeeded, "cannot decrease the succeeded counter"))
	}
	if st.CompletionTime != nil && ost.CompletionTime != nil && !st.CompletionTime.Equal(ost.CompletionTime) {
		errs = append(errs, field.Invalid(fld.Child("completionTime"), st.CompletionTime, apivalidation.FieldImmutableErrorMsg))
	}
	// NOTE: a Job being resumed (its Suspended condition turning False)
	// gets a new startTime from the controller.
	resuming := jobConditionTrue(old, batchv1.JobSuspended) && jobConditionIs(job, batchv1.JobSuspended, corev1.ConditionFalse)
	suspended := job.Spec.Suspend != nil && *job.Spec.Suspend
	if ost.StartTime != nil && !ost.StartTime.Equal(st.StartTime) && !suspended && !resuming {
		errs = append(errs, field.Required(fld.Child("startTime"), "startTime cannot be removed for unsuspended job"))
	}
	if jobConditionTrue(old, batchv1.JobSuccessCriteriaMet) && !jobConditionTrue(job, batchv1.JobSuccessCriteriaMet) {
		errs = append(errs, field.Invalid(fld.Child("conditions"), field.OmitValueType{}, "cannot disable the SuccessCriteriaMet=True condition"))
	}
	if jobConditionTrue(old, batchv1.JobComplete) && !jobConditionTrue(old, batchv1.JobSuccessCriteriaMet) && jobConditionTrue(job, batchv1.JobSuccessCriteriaMet) {
		errs = append(errs, field.Invalid(fld.Child("conditions"), field.OmitValueType{}, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
	}
	return errs
}

// jobStatusChange says which parts of the status an update changes.
type jobStatusChange struct {
	finished, complete, failed, failureTarget, successMet bool
	completedIndexes, failedIndexes                       bool
	active, ready, terminating, uncounted                 bool
	startTime, completionTime                             bool
}

func jobStatusChanges(job, old *batchv1.Job) jobStatusChange {
	changed := func(t batchv1.JobConditionType) bool { return jobConditionTrue(job, t) != jobConditionTrue(old, t) }
	st, ost := &job.Status, &old.Status
	return jobStatusChange{
		finished:         IsJobFinished(job) != IsJobFinished(old),
		complete:         changed(batchv1.JobComplete),
		failed:           changed(batchv1.JobFailed),
		failureTarget:    changed(batchv1.JobFailureTarget),
		successMet:       changed(batchv1.JobSuccessCriteriaMet),
		completedIndexes: st.CompletedIndexes != ost.CompletedIndexes,
		failedIndexes:    !equality.Semantic.DeepEqual(st.FailedIndexes, ost.FailedIndexes),
		active:           st.Active != ost.Active,
		ready:            !equality.Semantic.DeepEqual(st.Ready, ost.Ready),
		terminating:      !equality.Semantic.DeepEqual(st.Terminating, ost.Terminating),
		uncounted:        !equality.Semantic.DeepEqual(st.UncountedTerminatedPods, ost.UncountedTerminatedPods),
		startTime:        !equality.Semantic.DeepEqual(st.StartTime, ost.StartTime),
		completionTime:   !equality.Semantic.DeepEqual(st.CompletionTime, ost.CompletionTime),
	}
}

// jobConditionIs reports whether the Job's first condition of type t has
// status s.
func jobConditionIs(job *batchv1.Job, t batchv1.JobConditionType, s corev1.ConditionStatus) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status == s
		}
	}
	return false
}

// indexInterval is one "x" or "x-y" part of an index set.
type indexInterval struct{ first, last int32 }

// validIndexSet checks an index set as the status holds it ("0-3,5"):
// intervals in increasing order, each below completions.
func validIndexSet(s string, completions int32) error {
	if s == "" {
		return nil
	}
	var last *int32
	for _, part := range strings.Split(s, ",") {
		iv, err := parseIndexInterval(part, completions)
		if err != nil {
			return err
		}
		if last != nil && *last >= iv.first {
			return fmt.Errorf("non-increasing order, previous: %d, current: %d", *last, iv.first)
		}
		last = &iv.last
	}
	return nil
}

// parseIndexInterval reads "x" or "x-y" (x < y), both below completions.
func parseIndexInterval(s string, completions int32) (indexInterval, error) {
	bounds := strings.Split(s, "-")
	if len(bounds) > 2 {
		return indexInterval{}, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", s)
	}
	var out [2]int32
	for i, b := range bounds {
		n, err := strconv.Atoi(b)
		if err != nil {
			return indexInterval{}, fmt.Errorf("cannot convert string to integer for index: %q", b)
		}
		if n >= int(completions) {
			return indexInterval{}, fmt.Errorf("too large index: %q", b)
		}
		out[i] = int32(n)
	}
	if len(bounds) == 1 {
		return indexInterval{out[0], out[0]}, nil
	}
	if out[0] >= out[1] {
		return indexInterval{}, fmt.Errorf("non-increasing order, previous: %d, current: %d", out[0], out[1])
	}
	return indexInterval{out[0], out[1]}, nil
}

// indexSetsOverlap returns the first index in both sets, walking both in
// order; intervals that do not parse are skipped (their format is reported
// on its own).
func indexSetsOverlap(completed, failed string, completions int32) (int32, bool) {
	if completed == "" || failed == "" {
		return 0, false
	}
	parse := func(s string) []indexInterval {
		var out []indexInterval
		for _, part := range strings.Split(s, ",") {
			if iv, err := parseIndexInterval(part, completions); err == nil {
				out = append(out, iv)
			}
		}
		return out
	}
	cs, fs := parse(completed), parse(failed)
	for i, j := 0, 0; i < len(cs) && j < len(fs); {
		c, f := cs[i], fs[j]
		if c.first <= f.last && f.first <= c.last {
			return max(c.first, f.first), true
		}
		if c.first <= f.first {
			i++
		} else {
			j++
		}
	}
	return 0, false
}

// jobConditionTrue reports whether the Job has condition t with status True.
func jobConditionTrue(job *batchv1.Job, t batchv1.JobConditionType) bool {
	return IsJobConditionTrue(job.Status.Conditions, t)
}
