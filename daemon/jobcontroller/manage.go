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
	if diff = min(diff, admissionRoom(active)); diff <= 0 {
		return r // pod events resync the Job as its pods are admitted
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

// admissionRoom is how many pods a sync may create so that at most
// maxPodCreateDeletePerSync of the Job's active pods wait for the node to
// admit them.
//
// NOTE: Kubernetes' Job controller creates at most 500 pods per sync and,
// through its expectations, syncs again only once its informer has seen
// them all (it starts them in slowStartBatch batches of 1, 2, 4, … to stop
// early on errors). Nothing else paces it: a Job piles up as many Pending
// pods as its parallelism, for the scheduler to hold back, at the
// controller's client rate (20 QPS). Here the controller sees its
// creations in the same transaction, so that gate would pace nothing (a
// Job of parallelism 1,000,000 made about 1000 pods a second). On a cluster
// of one node the scheduler and the kubelet are where pods are let in, so
// a creation counts as observed once the node has admitted the pod (or the
// pod finished or went away): a Job keeps at most one sync's worth of pods
// waiting for admission, and creates more as they are admitted.
// status.active still counts waiting pods, as Kubernetes counts Pending
// ones, so a Job whose parallelism the node cannot hold at once shows the
// same counts as on a cluster until it has 500 pods waiting.
func admissionRoom(active []*corev1.Pod) int32 {
	waiting := int32(0)
	for _, p := range active {
		if !isAdmitted(p) {
			waiting++
		}
	}
	return max(0, maxPodCreateDeletePerSync-waiting)
}

// isAdmitted reports whether the node has let the pod in: the kubelet set
// its startTime, or the scheduler's PodScheduled condition is True.
func isAdmitted(p *corev1.Pod) bool {
	if p.Status.StartTime != nil {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
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
