package jobcontroller

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// indexState is one sync's view of an Indexed Job's completion indexes. For
// a NonIndexed Job it is empty and every method is a no-op.
type indexState struct {
	indexed bool
}

func indexedState(job *batchv1.Job, pods []*corev1.Pod, now time.Time) *indexState {
	return &indexState{}
}

func (s *indexState) finishing(job *batchv1.Job, now time.Time) *batchv1.JobCondition { return nil }
func (s *indexState) succeededTotal() int32                                           { return 0 }
func (s *indexState) delaysRemoval(p *corev1.Pod) bool                                { return false }
func (s *indexState) writeStatus(job *batchv1.Job)                                    {}
func (s *indexState) duplicates(active []*corev1.Pod) []*corev1.Pod                   { return nil }
func (s *indexState) indexesToCreate(n int, in syncInput) ([]int, time.Duration)      { return nil, 0 }

func hasValidIndex(job *batchv1.Job, p *corev1.Pod) bool { return true }
func hasBackoffLimitPerIndex(job *batchv1.Job) bool      { return job.Spec.BackoffLimitPerIndex != nil }

func addIndex(pod *corev1.Pod, job *batchv1.Job, index int) {}
