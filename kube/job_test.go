package kube

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestJobFinished(t *testing.T) {
	cond := func(t batchv1.JobConditionType, s corev1.ConditionStatus) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: s}
	}
	tests := map[string]struct {
		conds []batchv1.JobCondition
		want  batchv1.JobConditionType // "" = not finished
	}{
		"no conditions":        {},
		"suspended":            {conds: []batchv1.JobCondition{cond(batchv1.JobSuspended, corev1.ConditionTrue)}},
		"success criteria met": {conds: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue)}},
		"failure target":       {conds: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue)}},
		"complete": {conds: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue),
			cond(batchv1.JobComplete, corev1.ConditionTrue)}, want: batchv1.JobComplete},
		"failed": {conds: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue),
			cond(batchv1.JobFailed, corev1.ConditionTrue)}, want: batchv1.JobFailed},
		"complete False": {conds: []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionFalse)}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			job := &batchv1.Job{Status: batchv1.JobStatus{Conditions: tc.conds}}
			var got batchv1.JobConditionType
			if c := JobFinishedCondition(job); c != nil {
				got = c.Type
			}
			if got != tc.want || IsJobFinished(job) != (tc.want != "") {
				t.Errorf("finished by %q (IsJobFinished %t), want %q", got, IsJobFinished(job), tc.want)
			}
			for _, c := range tc.conds {
				if IsJobConditionTrue(tc.conds, c.Type) != (c.Status == corev1.ConditionTrue) {
					t.Errorf("IsJobConditionTrue(%s) = %t", c.Type, !(c.Status == corev1.ConditionTrue))
				}
			}
		})
	}
}

func TestIsIndexedJob(t *testing.T) {
	for mode, want := range map[*batchv1.CompletionMode]bool{
		nil: false, ptr.To(batchv1.NonIndexedCompletion): false, ptr.To(batchv1.IndexedCompletion): true,
	} {
		if got := IsIndexedJob(&batchv1.JobSpec{CompletionMode: mode}); got != want {
			t.Errorf("IsIndexedJob(%v) = %t, want %t", ptr.Deref(mode, "<nil>"), got, want)
		}
	}
}
