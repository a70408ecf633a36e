package jobcontroller

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// failureMatch is how a failed pod matches the Job's podFailurePolicy.
type failureMatch struct {
	action  batchv1.PodFailurePolicyAction // "" when no rule matched
	message string                         // for FailJob: the Job's failure message
}

// counts reports whether the failure counts toward the backoff limits:
// every failure but one matched by an Ignore rule.
func (m failureMatch) counts() bool {
	return m.action != batchv1.PodFailurePolicyActionIgnore
}

// matchFailurePolicy returns the first rule of policy that the failed pod
// matches: onExitCodes against the terminated containers (then init
// containers) with a non-zero exit code, or onPodConditions against the
// pod's conditions.
//
// NOTE: as Kubernetes' matchPodFailurePolicy, including its messages.
func matchFailurePolicy(policy *batchv1.PodFailurePolicy, p *corev1.Pod) failureMatch {
	if policy == nil {
		return failureMatch{}
	}
	for i, rule := range policy.Rules {
		var message string
		switch {
		case rule.OnExitCodes != nil:
			c := matchExitCodes(p, rule.OnExitCodes)
			if c == nil {
				continue
			}
			message = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %d matching %s rule at index %d",
				c.Name, p.Namespace, p.Name, c.State.Terminated.ExitCode, rule.Action, i)
		case rule.OnPodConditions != nil:
			c := matchPodConditions(p, rule.OnPodConditions)
			if c == nil {
				continue
			}
			message = fmt.Sprintf("Pod %s/%s has condition %s matching %s rule at index %d",
				p.Namespace, p.Name, c.Type, rule.Action, i)
		default:
			continue
		}
		switch rule.Action {
		case batchv1.PodFailurePolicyActionFailJob:
			return failureMatch{action: rule.Action, message: message}
		case batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex:
			return failureMatch{action: rule.Action}
		}
	}
	return failureMatch{}
}

// matchExitCodes returns the first terminated container (then init
// container) with a non-zero exit code matching req, or nil.
func matchExitCodes(p *corev1.Pod, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range list {
			c := &list[i]
			t := c.State.Terminated
			if t == nil || t.ExitCode == 0 || (req.ContainerName != nil && *req.ContainerName != c.Name) {
				continue
			}
			in := slices.Contains(req.Values, t.ExitCode)
			if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) ||
				(req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
				return c
			}
		}
	}
	return nil
}

// matchPodConditions returns the first pod condition matching a pattern.
func matchPodConditions(p *corev1.Pod, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		for _, pat := range patterns {
			status := pat.Status
			if status == "" {
				status = corev1.ConditionTrue // NOTE: the API server's default
			}
			if c.Type == pat.Type && c.Status == status {
				return c
			}
		}
	}
	return nil
}

// podFailurePolicyFailJob returns the failure message of the first failed
// pod matching a FailJob rule.
func podFailurePolicyFailJob(job *batchv1.Job, pods []*corev1.Pod) (string, bool) {
	if job.Spec.PodFailurePolicy == nil {
		return "", false
	}
	for _, p := range pods {
		if !isPodFailed(p, job) {
			continue
		}
		if m := matchFailurePolicy(job.Spec.PodFailurePolicy, p); m.action == batchv1.PodFailurePolicyActionFailJob {
			return m.message, true
		}
	}
	return "", false
}

// countsAsFailure reports whether a failed pod counts toward backoffLimit
// and status.failed (not if an Ignore rule matched it).
func countsAsFailure(job *batchv1.Job, p *corev1.Pod) bool {
	return matchFailurePolicy(job.Spec.PodFailurePolicy, p).counts()
}
