package jobcontroller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func exited(name string, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}}
}

func TestMatchFailurePolicy(t *testing.T) {
	onExit := func(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, container *string, codes ...int32) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: container, Operator: op, Values: codes}}
	}
	onCondition := func(action batchv1.PodFailurePolicyAction, t corev1.PodConditionType) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: action, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: t, Status: corev1.ConditionTrue}}}
	}
	failed := func(statuses []corev1.ContainerStatus, init []corev1.ContainerStatus, conds ...corev1.PodConditionType) *corev1.Pod {
		p := testPod("p", corev1.PodFailed)
		p.Status.ContainerStatuses, p.Status.InitContainerStatuses = statuses, init
		for _, c := range conds {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue})
		}
		return p
	}
	cases := map[string]struct {
		rules []batchv1.PodFailurePolicyRule
		pod   *corev1.Pod
		want  failureMatch
	}{
		"FailJob on an exit code": {
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, nil, 42)},
			pod:   failed([]corev1.ContainerStatus{exited("main", 42)}, nil),
			want: failureMatch{action: batchv1.PodFailurePolicyActionFailJob,
				message: "Container main for pod default/p failed with exit code 42 matching FailJob rule at index 0"},
		},
		"first matching rule wins": {
			rules: []batchv1.PodFailurePolicyRule{
				onExit(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpIn, nil, 1),
				onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpNotIn, nil, 0),
			},
			pod: failed([]corev1.ContainerStatus{exited("main", 3)}, nil),
			want: failureMatch{action: batchv1.PodFailurePolicyActionFailJob,
				message: "Container main for pod default/p failed with exit code 3 matching FailJob rule at index 1"},
		},
		"exit code 0 never matches": {
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpNotIn, nil, 1)},
			pod:   failed([]corev1.ContainerStatus{exited("main", 0), exited("side", 1)}, nil),
		},
		"container name filters": {
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpIn, ptr.To("side"), 5)},
			pod:   failed([]corev1.ContainerStatus{exited("main", 5)}, nil),
		},
		"init containers count": {
			rules: []batchv1.PodFailurePolicyRule{onExit(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, nil, 7)},
			pod:   failed(nil, []corev1.ContainerStatus{exited("init", 7)}),
			want:  failureMatch{action: batchv1.PodFailurePolicyActionFailIndex},
		},
		"Ignore on a pod condition": {
			rules: []batchv1.PodFailurePolicyRule{onCondition(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget)},
			pod:   failed(nil, nil, corev1.DisruptionTarget),
			want:  failureMatch{action: batchv1.PodFailurePolicyActionIgnore},
		},
		"FailJob on a pod condition": {
			rules: []batchv1.PodFailurePolicyRule{onCondition(batchv1.PodFailurePolicyActionFailJob, corev1.DisruptionTarget)},
			pod:   failed(nil, nil, corev1.DisruptionTarget),
			want: failureMatch{action: batchv1.PodFailurePolicyActionFailJob,
				message: "Pod default/p has condition DisruptionTarget matching FailJob rule at index 0"},
		},
		"no rule matches": {
			rules: []batchv1.PodFailurePolicyRule{onCondition(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget)},
			pod:   failed([]corev1.ContainerStatus{exited("main", 1)}, nil),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := matchFailurePolicy(&batchv1.PodFailurePolicy{Rules: tc.rules}, tc.pod)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(failureMatch{})); diff != "" {
				t.Errorf("match (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMatchSuccessPolicy(t *testing.T) {
	cases := map[string]struct {
		rules     []batchv1.SuccessPolicyRule
		succeeded string
		want      string
		wantOK    bool
	}{
		"nothing succeeded": {
			rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}},
		},
		"count": {
			rules:     []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](2)}},
			succeeded: "1,3", want: "Matched rules at index 0", wantOK: true,
		},
		"all listed indexes": {
			rules:     []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0,2-3")}},
			succeeded: "0-3", want: "Matched rules at index 0", wantOK: true,
		},
		"listed indexes missing one": {
			rules:     []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0,2-3")}},
			succeeded: "0-2",
		},
		"count within listed indexes, second rule": {
			rules: []batchv1.SuccessPolicyRule{
				{SucceededIndexes: ptr.To("5")},
				{SucceededIndexes: ptr.To("0-3"), SucceededCount: ptr.To[int32](2)},
			},
			succeeded: "1,3,4", want: "Matched rules at index 1", wantOK: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := matchSuccessPolicy(&batchv1.SuccessPolicy{Rules: tc.rules}, 10, parseIntervals(tc.succeeded, 10))
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("match = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
