package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// updatePod is a running bare Pod as the store holds it after create.
func updatePod() *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:       "node-a",
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.35"}},
			Containers:     []corev1.Container{{Name: "c", Image: "busybox:1.35"}, {Name: "d", Image: "busybox:1.35"}},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v",
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(int64(60))}},
			ActiveDeadlineSeconds: ptr.To(int64(100)),
			SchedulingGates:       []corev1.PodSchedulingGate{{Name: "g"}},
		},
	}
	defaultPodSpec(&pod.Spec)
	return pod
}

func TestValidatePodUpdate(t *testing.T) {
	const forbidden = "FieldValueForbidden spec: Forbidden: pod updates may not change fields other than " +
		"`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`," +
		"`spec.tolerations` (only additions to existing tolerations)," +
		"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n…"
	tests := map[string]struct {
		old    func(*corev1.Pod)
		change func(*corev1.Pod)
		want   []string
	}{
		"no change": {change: func(*corev1.Pod) {}},
		"container and init container images": {change: func(p *corev1.Pod) {
			p.Spec.Containers[1].Image = "busybox:1.36"
			p.Spec.InitContainers[0].Image = "other:1"
		}},
		"deadline lowered": {change: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(int64(50)) }},
		"deadline set":     {old: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil }, change: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(int64(5)) }},
		"toleration added": {change: func(p *corev1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
		}},
		"tolerationSeconds":       {change: func(p *corev1.Pod) { p.Spec.Tolerations[0].TolerationSeconds = ptr.To(int64(5)) }},
		"scheduling gate removed": {change: func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }},
		"grace from negative to 1": {
			old:    func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(-1)) },
			change: func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(1)) },
		},
		"deadline raised": {
			change: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To(int64(200)) },
			want:   []string{"FieldValueInvalid spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value"},
		},
		"deadline removed": {
			change: func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = nil },
			want:   []string{"FieldValueInvalid spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"},
		},
		"toleration removed": {
			change: func(p *corev1.Pod) { p.Spec.Tolerations = nil },
			want:   []string{"FieldValueForbidden spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"},
		},
		"scheduling gate added": {
			change: func(p *corev1.Pod) {
				p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: "h"})
			},
			want: []string{"FieldValueForbidden spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'h'"},
		},
		"container added": {
			change: func(p *corev1.Pod) {
				p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "e", Image: "x:1", ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile})
			},
			want: []string{"FieldValueForbidden spec.containers: Forbidden: pod updates may not add or remove containers"},
		},
		"init container removed": {
			change: func(p *corev1.Pod) { p.Spec.InitContainers = nil },
			want:   []string{"FieldValueForbidden spec.initContainers: Forbidden: pod updates may not add or remove containers"},
		},
		"image with spaces": {
			change: func(p *corev1.Pod) { p.Spec.Containers[0].Image = " busybox:1.36" },
			want:   []string{"FieldValueInvalid spec.containers[0].image: Invalid value: \" busybox:1.36\": must not have leading or trailing whitespace"},
		},
		"restartPolicy":   {change: func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }, want: []string{forbidden}},
		"container args":  {change: func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"x"} }, want: []string{forbidden}},
		"grace otherwise": {change: func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(1)) }, want: []string{forbidden}},
		"nodeName":        {change: func(p *corev1.Pod) { p.Spec.NodeName = "other" }, want: []string{forbidden}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			old := updatePod()
			if tc.old != nil {
				tc.old(old)
			}
			pod := old.DeepCopy()
			tc.change(pod)
			matchLines(t, tc.want, causeLines(ValidatePodUpdate(pod, old)))
		})
	}
}
