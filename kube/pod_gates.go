package kube

import corev1 "k8s.io/api/core/v1"

// dropGatedPodSpecFields removes from spec what kube-apiserver v1.34 drops
// on every write of a pod or pod template because the feature gate of the
// field is off by default (pkg/api/pod's dropDisabledFields), unless old,
// the stored spec, already uses it (nil on create).
//
// NOTE: ContainerRestartRules is Alpha in v1.34: a restartPolicy on a
// regular or ephemeral container, restartPolicyRules anywhere, and an init
// container's restartPolicy other than Always are dropped silently, not
// refused — validation's "may not be set for non-init containers" is what
// v1.28–v1.33 answered and is unreachable in v1.34 with the gate off.
func dropGatedPodSpecFields(spec, old *corev1.PodSpec) {
	if containerRestartRulesInUse(old) {
		return
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			c.RestartPolicy = nil
		}
		c.RestartPolicyRules = nil
	}
	for i := range spec.Containers {
		spec.Containers[i].RestartPolicy = nil
		spec.Containers[i].RestartPolicyRules = nil
	}
	for i := range spec.EphemeralContainers {
		spec.EphemeralContainers[i].RestartPolicy = nil
		spec.EphemeralContainers[i].RestartPolicyRules = nil
	}
}

// containerRestartRulesInUse reports whether a stored spec uses the fields
// of the ContainerRestartRules gate (kube's function of that name).
func containerRestartRulesInUse(old *corev1.PodSpec) bool {
	if old == nil {
		return false
	}
	for _, c := range old.InitContainers {
		if (c.RestartPolicy != nil && *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) || len(c.RestartPolicyRules) > 0 {
			return true
		}
	}
	for _, c := range old.Containers {
		if c.RestartPolicy != nil {
			return true
		}
	}
	return false
}
