package kube

import corev1 "k8s.io/api/core/v1"

// ContainerRestarts reports whether the kubelet starts the pod's container
// name again after it exited with exitCode, as kube 1.34 decides (without
// the alpha ContainerRestartRules): a sidecar always restarts; an init
// container until it succeeds, unless the pod's restartPolicy is Never; a
// regular container as the pod's restartPolicy says (restartPolicyRestarts);
// an ephemeral container, or one the spec does not have, never.
//
// NOTE: the decision about one exit; a pod being deleted or past its
// deadline restarts nothing, which the caller knows.
func ContainerRestarts(spec *corev1.PodSpec, name string, exitCode int32) bool {
	_, kind := FindContainer(spec, name)
	switch kind {
	case SidecarContainer:
		return true
	case InitContainer:
		return exitCode != 0 && spec.RestartPolicy != corev1.RestartPolicyNever
	case RegularContainer:
		return restartPolicyRestarts(spec.RestartPolicy, exitCode)
	}
	return false
}

// restartPolicyRestarts is a pod restartPolicy's verdict on a regular
// container that exited with exitCode (the kubelet's
// ShouldContainerBeRestarted): Always restarts it, OnFailure only after a
// failure, Never not at all.
func restartPolicyRestarts(policy corev1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case corev1.RestartPolicyAlways:
		return true
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return false
}
