package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of the Job policies in kube-apiserver's validation.
const (
	maxPodFailurePolicyRules                   = 20
	maxPodFailurePolicyOnExitCodesValues       = 255
	maxPodFailurePolicyOnPodConditionsPatterns = 20
	maxSuccessPolicyRules                      = 20
	maxSuccessPolicySucceededIndexesLength     = 64 * 1024
)

// The values kube accepts, sorted as kube lists them in its messages.
var (
	podFailurePolicyActions = []batchv1.PodFailurePolicyAction{
		batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore,
	}
	onExitCodesOperators = []batchv1.PodFailurePolicyOnExitCodesOperator{
		batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn,
	}
	onPodConditionsStatuses = []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
	podReplacementPolicies  = []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}
)

// validatePodFailurePolicy validates the rules of spec.podFailurePolicy.
func validatePodFailurePolicy(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	rules := fld.Child("rules")
	if n := len(spec.PodFailurePolicy.Rules); n > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rules, n, maxPodFailurePolicyRules))
	}
	names := map[string]bool{}
	for _, c := range spec.Template.Spec.Containers {
		names[c.Name] = true
	}
	for _, c := range spec.Template.Spec.InitContainers {
		names[c.Name] = true
	}
	for i := range spec.PodFailurePolicy.Rules {
		errs = append(errs, validatePodFailurePolicyRule(spec, &spec.PodFailurePolicy.Rules[i], rules.Index(i), names)...)
	}
	return errs
}

// validatePodFailurePolicyRule validates one rule: its action and exactly
// one of onExitCodes and onPodConditions.
func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, fld *field.Path, containers map[string]bool) field.ErrorList {
	var errs field.ErrorList
	action := fld.Child("action")
	switch {
	case rule.Action == "":
		errs = append(errs, field.Required(action, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(action, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !slices.Contains(podFailurePolicyActions, rule.Action):
		errs = append(errs, field.NotSupported(action, rule.Action, podFailurePolicyActions))
	}
	if rule.OnExitCodes != nil {
		errs = append(errs, validateOnExitCodes(rule.OnExitCodes, fld.Child("onExitCodes"), containers)...)
	}
	if len(rule.OnPodConditions) > 0 {
		errs = append(errs, validateOnPodConditions(rule.OnPodConditions, fld.Child("onPodConditions"))...)
	}
	switch {
	case rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0:
		errs = append(errs, field.Invalid(fld, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	case rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0:
		errs = append(errs, field.Invalid(fld, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

// validateOnPodConditions validates the patterns of a rule: at most 20, each
// a qualified condition type and a condition status.
func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(patterns) > maxPodFailurePolicyOnPodConditionsPatterns {
		errs = append(errs, field.TooMany(fld, len(patterns), maxPodFailurePolicyOnPodConditionsPatterns))
	}
	for i, p := range patterns {
		for _, msg := range validation.IsQualifiedName(string(p.Type)) {
			errs = append(errs, field.Invalid(fld.Index(i).Child("type"), string(p.Type), msg))
		}
		status := fld.Index(i).Child("status")
		switch {
		case p.Status == "":
			errs = append(errs, field.Required(status, fmt.Sprintf("valid values: %q", onPodConditionsStatuses)))
		case !slices.Contains(onPodConditionsStatuses, p.Status):
			errs = append(errs, field.NotSupported(status, p.Status, onPodConditionsStatuses))
		}
	}
	return errs
}

// validateOnExitCodes validates an exit-code requirement: operator, a
// container of the template, 1–255 sorted unique values, no 0 with In.
func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, fld *field.Path, containers map[string]bool) field.ErrorList {
	var errs field.ErrorList
	op := fld.Child("operator")
	switch {
	case req.Operator == "":
		errs = append(errs, field.Required(op, fmt.Sprintf("valid values: %q", onExitCodesOperators)))
	case !slices.Contains(onExitCodesOperators, req.Operator):
		errs = append(errs, field.NotSupported(op, req.Operator, onExitCodesOperators))
	}
	if req.ContainerName != nil && !containers[*req.ContainerName] {
		errs = append(errs, field.Invalid(fld.Child("containerName"), *req.ContainerName,
			"must be one of the container or initContainer names in the pod template"))
	}
	values := fld.Child("values")
	switch n := len(req.Values); {
	case n == 0:
		errs = append(errs, field.Invalid(values, req.Values, "at least one value is required"))
	case n > maxPodFailurePolicyOnExitCodesValues:
		errs = append(errs, field.TooMany(values, n, maxPodFailurePolicyOnExitCodesValues))
	}
	seen := map[int32]bool{}
	for i, v := range req.Values {
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(values.Index(i), v, "must not be 0 for the In operator"))
		}
		if seen[v] {
			errs = append(errs, field.Duplicate(values.Index(i), v))
		}
		seen[v] = true
	}
	if !slices.IsSorted(req.Values) {
		errs = append(errs, field.Invalid(values, req.Values, "must be ordered"))
	}
	return errs
}

// validateSuccessPolicy validates the rules of an Indexed job's
// spec.successPolicy: 1–20 of them.
func validateSuccessPolicy(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	rules := fld.Child("rules")
	if len(spec.SuccessPolicy.Rules) == 0 {
		errs = append(errs, field.Required(rules, "at least one rules must be specified when the successPolicy is specified"))
	}
	if n := len(spec.SuccessPolicy.Rules); n > maxSuccessPolicyRules {
		errs = append(errs, field.TooMany(rules, n, maxSuccessPolicyRules))
	}
	for i := range spec.SuccessPolicy.Rules {
		errs = append(errs, validateSuccessPolicyRule(spec, &spec.SuccessPolicy.Rules[i], rules.Index(i))...)
	}
	return errs
}

// validateSuccessPolicyRule validates one rule: succeededIndexes (a
// compressed index set below completions) and/or succeededCount (at most
// completions and at most the number of succeededIndexes).
func validateSuccessPolicyRule(spec *batchv1.JobSpec, rule *batchv1.SuccessPolicyRule, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
		errs = append(errs, field.Required(fld, "at least one of succeededCount or succeededIndexes must be specified"))
	}
	// NOTE: kube dereferences completions here unchecked; a missing one is
	// already reported as required, so its checks are skipped instead.
	if spec.Completions == nil {
		return errs
	}
	completions := *spec.Completions
	var total int32
	if rule.SucceededIndexes != nil {
		indexes := fld.Child("succeededIndexes")
		if len(*rule.SucceededIndexes) > maxSuccessPolicySucceededIndexesLength {
			errs = append(errs, field.TooLong(indexes, *rule.SucceededIndexes, maxSuccessPolicySucceededIndexesLength))
		}
		var err error
		if total, err = countIndexes(*rule.SucceededIndexes, completions); err != nil {
			errs = append(errs, field.Invalid(indexes, *rule.SucceededIndexes, "error parsing succeededIndexes: "+err.Error()))
		}
	}
	if n := rule.SucceededCount; n != nil {
		count := fld.Child("succeededCount")
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*n), count)...)
		if *n > completions {
			errs = append(errs, field.Invalid(count, *n, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
		}
		if rule.SucceededIndexes != nil && *n > total {
			errs = append(errs, field.Invalid(count, *n, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
		}
	}
	return errs
}

// countIndexes parses a compressed index set ("1,3-5,7") whose indexes are
// below completions and increasing, and returns how many indexes it holds.
// Its errors are kube's.
func countIndexes(set string, completions int32) (int32, error) {
	if set == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, part := range strings.Split(set, ",") {
		lo, hi, err := parseIndexRange(part, completions)
		if err != nil {
			return 0, err
		}
		if last >= lo {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, lo)
		}
		total += hi - lo + 1
		last = hi
	}
	return total, nil
}

// parseIndexRange parses "i" or "i-j" (i < j), both below completions.
func parseIndexRange(part string, completions int32) (lo, hi int32, err error) {
	bounds := strings.Split(part, "-")
	if len(bounds) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", part)
	}
	if lo, err = parseIndex(bounds[0], completions); err != nil || len(bounds) == 1 {
		return lo, lo, err
	}
	if hi, err = parseIndex(bounds[1], completions); err != nil {
		return 0, 0, err
	}
	if lo >= hi {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", lo, hi)
	}
	return lo, hi, nil
}

// parseIndex parses one index below completions.
func parseIndex(s string, completions int32) (int32, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("cannot convert string to integer for index: %q", s)
	}
	if n >= int(completions) {
		return 0, fmt.Errorf("too large index: %q", s)
	}
	return int32(n), nil
}

// validatePodReplacementPolicy allows Failed and TerminatingOrFailed, and
// only Failed with a podFailurePolicy.
func validatePodReplacementPolicy(spec *batchv1.JobSpec, fld *field.Path) field.ErrorList {
	p := spec.PodReplacementPolicy
	switch {
	case p == nil:
		return nil
	case spec.PodFailurePolicy != nil && *p != batchv1.Failed:
		return field.ErrorList{field.NotSupported(fld, *p, []batchv1.PodReplacementPolicy{batchv1.Failed})}
	case spec.PodFailurePolicy == nil && !slices.Contains(podReplacementPolicies, *p):
		return field.ErrorList{field.NotSupported(fld, *p, podReplacementPolicies)}
	}
	return nil
}
