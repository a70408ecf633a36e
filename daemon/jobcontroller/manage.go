package jobcontroller

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/kube"
)

// maxPodCreateDeletePerSync bounds the pods one sync creates or deletes, so
// that a big Job does not starve the others.
//
// NOTE: Kubernetes' MaxPodCreateDeletePerSync.
const maxPodCreateDeletePerSync = 500

// noIndex is the completion index of a NonIndexed Job's pod.
const noIndex = -1

type manageInput struct {
	job       *batchv1.Job
	pods      podSet
	succeeded int32
	idx       *indexState
	backoff   backoffRecord // including this sync's failures
	in        syncInput
}

type manageResult struct {
	active       int32
	deleted      int32 // pods deleted (now terminating)
	deletedReady int32
	creates      []podToCreate
	deletes      []*corev1.Pod
	requeue      time.Duration
}

// manage moves the number of active pods toward the wanted one: a
// suspended Job has none; otherwise parallelism, capped by the completions
// still missing. A sync either deletes or creates, never both; creation
// waits for the failure backoff.
//
// NOTE: Kubernetes' manageJob.
func manage(m manageInput) manageResult {
	job, active := m.job, m.pods.active
	r := manageResult{active: int32(len(active))}
	if isSuspended(job) {
		r.deletes = active
		return r.withDeleted()
	}
	want := wantActive(job, m.succeeded, r.active)
	r.deletes = m.idx.duplicates(active)
	if rm := int(r.active-want) - len(r.deletes); rm > 0 {
		r.deletes = append(r.deletes, podsForRemoval(without(active, r.deletes), rm)...)
	}
	if len(r.deletes) > maxPodCreateDeletePerSync {
		r.deletes = r.deletes[:maxPodCreateDeletePerSync]
	}
	if len(r.deletes) > 0 {
		return r.withDeleted()
	}

	var replacing int32
	if onlyReplaceFailedPods(job) {
		replacing = m.pods.terminating
	}
	diff := want - replacing - r.active
	if diff <= 0 {
		return r
	}
	if !hasBackoffLimitPerIndex(job) {
		if wait := m.backoff.remaining(m.in.now, m.in.backoffBase, m.in.backoffMax); wait > 0 {
			r.requeue = wait
			return r
		}
	}
	if diff > maxPodCreateDeletePerSync {
		diff = maxPodCreateDeletePerSync
	}
	if !m.idx.indexed {
		for i := int32(0); i < diff; i++ {
			r.creates = append(r.creates, podToCreate{index: noIndex})
		}
	} else {
		r.creates, r.requeue = m.idx.indexesToCreate(int(diff), m.in)
	}
	r.active += int32(len(r.creates))
	return r
}

func (r manageResult) withDeleted() manageResult {
	r.deleted = int32(len(r.deletes))
	r.active -= r.deleted
	for _, p := range r.deletes {
		if kube.IsPodReady(p) {
			r.deletedReady++
		}
	}
	return r
}

// wantActive is how many pods should be active: parallelism, but never more
// than the completions still missing; without completions, parallelism until
// the first success, then whatever still runs.
func wantActive(job *batchv1.Job, succeeded, active int32) int32 {
	parallelism := int32(1)
	if job.Spec.Parallelism != nil {
		parallelism = *job.Spec.Parallelism
	}
	if job.Spec.Completions == nil {
		if succeeded > 0 {
			return active
		}
		return parallelism
	}
	want := *job.Spec.Completions - succeeded
	if want > parallelism {
		want = parallelism
	}
	if want < 0 {
		want = 0
	}
	return want
}

// without returns pods minus those in drop.
func without(pods, drop []*corev1.Pod) []*corev1.Pod {
	if len(drop) == 0 {
		return pods
	}
	skip := make(map[*corev1.Pod]bool, len(drop))
	for _, p := range drop {
		skip[p] = true
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if !skip[p] {
			out = append(out, p)
		}
	}
	return out
}
