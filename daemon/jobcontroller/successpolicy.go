package jobcontroller

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
)

// matchSuccessPolicy returns the SuccessCriteriaMet message of the first
// successPolicy rule the succeeded indexes satisfy: all of its
// succeededIndexes (or succeededCount of them), or succeededCount indexes
// overall.
//
// NOTE: as Kubernetes' matchSuccessPolicy; the message is
// "Matched rules at index <i>".
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int, succeeded intervals) (string, bool) {
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		matched := false
		switch {
		case rule.SucceededIndexes != nil:
			required := parseIntervals(*rule.SucceededIndexes, completions)
			if len(required) == 0 {
				continue
			}
			n := required.overlap(succeeded)
			matched = n == required.total() || (rule.SucceededCount != nil && n >= int(*rule.SucceededCount))
		case rule.SucceededCount != nil:
			matched = succeeded.total() >= int(*rule.SucceededCount)
		}
		if matched {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}
