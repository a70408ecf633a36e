package jobcontroller

import (
	"fmt"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func admitted(p *corev1.Pod) { p.Status.StartTime = ptr.To(metav1.NewTime(at(-1))) }
func unschedulable(p *corev1.Pod) {
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
}
func scheduledTrue(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
}

// TestManagePacedByAdmission: a sync creates at most 500 pods, and no more
// than keep 500 of the Job's pods waiting for the node to admit them.
func TestManagePacedByAdmission(t *testing.T) {
	pods := func(n int, opts ...podOpt) []*corev1.Pod {
		out := make([]*corev1.Pod, n)
		for i := range out {
			out[i] = testPod(fmt.Sprintf("p%d-%d", len(opts), i), corev1.PodPending, opts...)
		}
		return out
	}
	cat := func(lists ...[]*corev1.Pod) []*corev1.Pod {
		var out []*corev1.Pod
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	tests := map[string]struct {
		parallelism int32
		indexed     bool
		pods        []*corev1.Pod
		wantCreates int
	}{
		"small Job at once":                  {parallelism: 3, wantCreates: 3},
		"one sync's worth":                   {parallelism: 1_000_000, wantCreates: 500},
		"indexed, one sync's worth":          {parallelism: 100_000, indexed: true, wantCreates: 500},
		"500 waiting, unseen by the node":    {parallelism: 1_000_000, pods: pods(500), wantCreates: 0},
		"500 waiting, unschedulable":         {parallelism: 1_000_000, pods: pods(500, unschedulable), wantCreates: 0},
		"admitted ones make room":            {parallelism: 1_000_000, pods: cat(pods(300), pods(110, admitted)), wantCreates: 200},
		"PodScheduled True is admitted":      {parallelism: 1_000_000, pods: cat(pods(499), pods(10, scheduledTrue)), wantCreates: 1},
		"waiting below the bound: no change": {parallelism: 300, pods: cat(pods(190, unschedulable), pods(110, admitted)), wantCreates: 0},
		"refills to parallelism":             {parallelism: 300, pods: cat(pods(189, unschedulable), pods(110, admitted)), wantCreates: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			job := newJob("j", func(j *batchv1.Job) {
				j.Spec.Parallelism = ptr.To(tc.parallelism)
				j.Spec.Completions = ptr.To(tc.parallelism)
				if tc.indexed {
					j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				}
			})
			set := classifyPods(tc.pods)
			r := manage(manageInput{job: job, pods: set, idx: indexedState(job, set), in: syncInput{job: job, now: at(0)}})
			if len(r.creates) != tc.wantCreates {
				t.Errorf("%d pods to create, want %d", len(r.creates), tc.wantCreates)
			}
			if want := int32(len(tc.pods) + tc.wantCreates); r.active != want {
				t.Errorf("active %d, want %d", r.active, want)
			}
		})
	}
}
