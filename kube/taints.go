package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// NoExecuteTaints are the taints of effect NoExecute: those that evict
// running pods.
func NoExecuteTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// NoExecuteEviction is the taint eviction controller's decision for a pod
// with tolerations on a node with the NoExecute taints: evict is false
// when the pod may stay for good (no taint, or every taint tolerated with
// no tolerationSeconds); otherwise it is evicted after delay — at once if
// a taint is not tolerated, else after the least tolerationSeconds (a
// value ≤ 0 meaning at once) of the tolerations used. As kube's
// GetMatchingTolerations, the toleration used for a taint is the first
// that tolerates it.
func NoExecuteEviction(taints []corev1.Taint, tolerations []corev1.Toleration) (delay time.Duration, evict bool) {
	if len(taints) == 0 {
		return 0, false
	}
	least, bounded := int64(0), false
	for i := range taints {
		used := firstToleration(&taints[i], tolerations)
		if used == nil {
			return 0, true
		}
		if s := used.TolerationSeconds; s != nil && (!bounded || *s < least) {
			least, bounded = max(*s, 0), true
		}
	}
	if !bounded {
		return 0, false
	}
	return time.Duration(least) * time.Second, true
}

func firstToleration(taint *corev1.Taint, tolerations []corev1.Toleration) *corev1.Toleration {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(taint) {
			return &tolerations[i]
		}
	}
	return nil
}
