package kube

import corev1 "k8s.io/api/core/v1"

// DefaultTolerationSeconds is how long a pod stays bound to a node that is
// not ready or unreachable, unless it says otherwise: kube-apiserver's
// DefaultTolerationSeconds admission plugin (--default-not-ready-
// toleration-seconds, --default-unreachable-toleration-seconds).
const DefaultTolerationSeconds = 300

// admitDefaultTolerationSeconds is that plugin on a pod created or
// updated (PodStrategy.Admit, PreparePodForUpdate): a pod with no
// toleration of the not-ready (or unreachable) NoExecute taint gets one,
// Exists, for DefaultTolerationSeconds. A toleration with no key or no
// effect counts as one. On an update it puts back what a client's full
// manifest leaves out, which the tolerations' update rule (only additions)
// would refuse otherwise.
func admitDefaultTolerationSeconds(pod *corev1.Pod) {
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		tolerated := false
		for _, t := range pod.Spec.Tolerations {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				tolerated = true
			}
		}
		if !tolerated {
			seconds := int64(DefaultTolerationSeconds)
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds})
		}
	}
}
