package kube

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestNoExecuteEviction(t *testing.T) {
	taint := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}
	other := corev1.Taint{Key: "other", Effect: corev1.TaintEffectNoExecute}
	seconds := func(s int64) *int64 { return &s }
	tolerate := func(key string, s *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	type result struct {
		Delay time.Duration
		Evict bool
	}
	tests := map[string]struct {
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		want        result
	}{
		"no taint":      {tolerations: []corev1.Toleration{tolerate("k", seconds(5))}, want: result{0, false}},
		"not tolerated": {taints: []corev1.Taint{taint}, want: result{0, true}},
		"one of two":    {taints: []corev1.Taint{taint, other}, tolerations: []corev1.Toleration{tolerate("k", nil)}, want: result{0, true}},
		"forever":       {taints: []corev1.Taint{taint}, tolerations: []corev1.Toleration{tolerate("k", nil)}, want: result{0, false}},
		"for a while":   {taints: []corev1.Taint{taint}, tolerations: []corev1.Toleration{tolerate("k", seconds(30))}, want: result{30 * time.Second, true}},
		"zero":          {taints: []corev1.Taint{taint}, tolerations: []corev1.Toleration{tolerate("k", seconds(0))}, want: result{0, true}},
		"negative":      {taints: []corev1.Taint{taint}, tolerations: []corev1.Toleration{tolerate("k", seconds(-3))}, want: result{0, true}},
		"least of taints": {
			taints:      []corev1.Taint{taint, other},
			tolerations: []corev1.Toleration{tolerate("k", seconds(30)), tolerate("other", seconds(10))},
			want:        result{10 * time.Second, true},
		},
		"bounded and forever": {
			taints:      []corev1.Taint{taint, other},
			tolerations: []corev1.Toleration{tolerate("k", nil), tolerate("other", seconds(10))},
			want:        result{10 * time.Second, true},
		},
		"first toleration used": {
			taints:      []corev1.Taint{taint},
			tolerations: []corev1.Toleration{tolerate("k", nil), tolerate("", seconds(1))},
			want:        result{0, false},
		},
		"value must match": {
			taints:      []corev1.Taint{taint},
			tolerations: []corev1.Toleration{{Key: "k", Value: "w", Effect: corev1.TaintEffectNoExecute}},
			want:        result{0, true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d, evict := NoExecuteEviction(tc.taints, tc.tolerations)
			if diff := cmp.Diff(tc.want, result{d, evict}); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
