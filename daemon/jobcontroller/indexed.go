package jobcontroller

import (
	"math"
	"sort"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/kube"
)

// completionIndexEnv is the variable Indexed pods learn their index from.
const completionIndexEnv = "JOB_COMPLETION_INDEX"

// podToCreate is one pod a sync creates.
type podToCreate struct {
	index int // completion index, or noIndex
	// replaces is, with backoffLimitPerIndex, the index's last failed pod:
	// the new pod's failure-count annotations continue from it.
	replaces *corev1.Pod
}

// indexState is one sync's view of an Indexed Job's completion indexes. For
// a NonIndexed Job it is empty and its methods do nothing.
type indexState struct {
	indexed     bool
	job         *batchv1.Job
	completions int
	succeeded   intervals // completed indexes, with this sync's successes
	active      []*corev1.Pod
	terminating []*corev1.Pod

	// With backoffLimitPerIndex:
	perIndex bool
	failed   intervals // failed indexes, with this sync's failures
	// delayed holds, per index to be retried, its last failed pod: its
	// finalizer stays (and it stays uncounted) until the retry exists,
	// so the retry's failure count can continue from it.
	delayed map[int]*corev1.Pod
}

func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return kube.IsIndexedJob(&job.Spec) && job.Spec.BackoffLimitPerIndex != nil
}

// indexedState computes the index sets of an Indexed Job from its status
// and the uncounted pods.
//
// NOTE: Kubernetes' calculateSucceededIndexes, calculateFailedIndexes and
// getPodsWithDelayedDeletionPerIndex.
func indexedState(job *batchv1.Job, pods podSet) *indexState {
	if !kube.IsIndexedJob(&job.Spec) {
		return &indexState{}
	}
	s := &indexState{indexed: true, job: job, completions: int(ptr.Deref(job.Spec.Completions, 0)), active: pods.active}
	var succeeded []int
	for _, p := range pods.all {
		if p.DeletionTimestamp != nil && !kube.IsPodTerminal(p) {
			s.terminating = append(s.terminating, p)
		}
		if p.Status.Phase == corev1.PodSucceeded && hasTrackingFinalizer(p) && hasValidIndex(job, p) {
			succeeded = append(succeeded, completionIndex(p))
		}
	}
	s.succeeded = parseIntervals(job.Status.CompletedIndexes, s.completions).withIndexes(succeeded)
	if !hasBackoffLimitPerIndex(job) {
		return s
	}
	s.perIndex = true
	var failed []int
	for _, p := range pods.all {
		if hasTrackingFinalizer(p) && hasValidIndex(job, p) && isIndexFailed(job, p) {
			failed = append(failed, completionIndex(p))
		}
	}
	s.failed = parseIntervals(ptr.Deref(job.Status.FailedIndexes, ""), s.completions).withIndexes(failed)
	s.delayed = s.delayedRemovals(pods.all)
	return s
}

// isIndexFailed reports whether a pod's failure fails its index: a FailIndex
// rule matched, or a counted failure with the index's retries used up.
func isIndexFailed(job *batchv1.Job, p *corev1.Pod) bool {
	if !isPodFailed(p, job) {
		return false
	}
	m := matchFailurePolicy(job.Spec.PodFailurePolicy, p)
	if m.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	return m.counts() && indexFailureCount(p) >= *job.Spec.BackoffLimitPerIndex
}

func (s *indexState) delayedRemovals(pods []*corev1.Pod) map[int]*corev1.Pod {
	busy := indexesOf(s.active)
	out := map[int]*corev1.Pod{}
	for _, p := range pods {
		if !hasTrackingFinalizer(p) || !hasValidIndex(s.job, p) || !isPodFailed(p, s.job) {
			continue
		}
		ix := completionIndex(p)
		if s.succeeded.has(ix) || s.failed.has(ix) || busy[ix] {
			continue
		}
		last, ok := out[ix]
		if !ok || (absoluteFailureCount(last) <= absoluteFailureCount(p) && !finishedTime(p).Before(finishedTime(last))) {
			out[ix] = p
		}
	}
	return out
}

// finishing returns the finishing condition the index sets reach: too many
// failed indexes, every index settled with some failed, or a successPolicy
// rule matched; nil if none.
func (s *indexState) finishing(job *batchv1.Job, now time.Time) *batchv1.JobCondition {
	if !s.indexed {
		return nil
	}
	if s.perIndex {
		if job.Spec.MaxFailedIndexes != nil && s.failed.total() > int(*job.Spec.MaxFailedIndexes) {
			return failureTarget(batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes, now)
		}
		if s.failed.total() > 0 && s.failed.total()+s.succeeded.total() >= s.completions {
			return failureTarget(batchv1.JobReasonFailedIndexes, msgFailedIndexes, now)
		}
	}
	if msg, ok := matchSuccessPolicy(job.Spec.SuccessPolicy, s.completions, s.succeeded); ok {
		return successCriteriaMet(batchv1.JobReasonSuccessPolicy, msg, now)
	}
	return nil
}

func (s *indexState) succeededTotal() int32 { return int32(s.succeeded.total()) }

// delaysRemoval reports whether p is a failed pod whose finalizer must stay
// until its index is retried.
func (s *indexState) delaysRemoval(p *corev1.Pod) bool {
	if !s.perIndex {
		return false
	}
	last, ok := s.delayed[completionIndex(p)]
	return ok && last.UID == p.UID
}

// writeStatus sets the index fields of the status: succeeded,
// completedIndexes and (with backoffLimitPerIndex) failedIndexes.
func (s *indexState) writeStatus(job *batchv1.Job) {
	if !s.indexed {
		return
	}
	job.Status.Succeeded = s.succeededTotal()
	job.Status.CompletedIndexes = s.succeeded.String()
	job.Status.FailedIndexes = nil
	if s.perIndex {
		job.Status.FailedIndexes = ptr.To(s.failed.String())
	}
}

// duplicates returns the active pods to delete whatever the parallelism:
// pods without a valid index, and all but the most advanced pod of an index
// that has several.
//
// NOTE: Kubernetes' appendDuplicatedIndexPodsForRemoval.
func (s *indexState) duplicates(active []*corev1.Pod) []*corev1.Pod {
	if !s.indexed {
		return nil
	}
	byIndex := map[int][]*corev1.Pod{}
	var rm []*corev1.Pod
	for _, p := range active {
		if !hasValidIndex(s.job, p) {
			rm = append(rm, p)
			continue
		}
		byIndex[completionIndex(p)] = append(byIndex[completionIndex(p)], p)
	}
	indexes := make([]int, 0, len(byIndex))
	for ix := range byIndex {
		indexes = append(indexes, ix)
	}
	sort.Ints(indexes)
	for _, ix := range indexes {
		same := byIndex[ix]
		if len(same) > 1 {
			rm = append(rm, podsForRemoval(same, len(same)-1)...)
		}
	}
	return rm
}

// indexesToCreate takes the n lowest indexes that are neither succeeded,
// active, failed nor (when only failed pods are replaced) still
// terminating. With backoffLimitPerIndex, it returns only those whose own
// backoff has passed, and requeue is when the next one's passes.
//
// NOTE: Kubernetes' firstPendingIndexes and
// getPodCreationInfoForIndependentIndexes.
func (s *indexState) indexesToCreate(n int, in syncInput) (creates []podToCreate, requeue time.Duration) {
	taken := s.succeeded.withIndexes(keys(indexesOf(s.active)))
	if onlyReplaceFailedPods(s.job) {
		taken = taken.withIndexes(keys(indexesOf(s.terminating)))
	}
	taken = taken.merge(s.failed)
	for _, ix := range taken.missing(s.completions, n) {
		replaces := s.delayed[ix]
		if s.perIndex {
			if wait := indexBackoff(replaces).remaining(in.now, in.backoffBase, in.backoffMax); wait > 0 {
				requeue = earliest(requeue, wait)
				continue
			}
		}
		creates = append(creates, podToCreate{index: ix, replaces: replaces})
	}
	return creates, requeue
}

// indexBackoff is the backoff of an index whose last failed pod is p.
func indexBackoff(p *corev1.Pod) backoffRecord {
	if p == nil {
		return backoffRecord{}
	}
	return backoffRecord{failuresAfterLastSuccess: absoluteFailureCount(p) + 1, lastFailureTime: finishedTime(p)}
}

// addIndex makes pod the pod of a completion index: the index annotation
// and label, JOB_COMPLETION_INDEX in every container, the hostname, the
// indexed generateName and, with backoffLimitPerIndex, the failure counts.
func addIndex(pod *corev1.Pod, job *batchv1.Job, c podToCreate) {
	ix := strconv.Itoa(c.index)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = ix
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = ix
	pod.Spec.Hostname = job.Name + "-" + ix
	pod.GenerateName = indexedGenerateName(job.Name, c.index)
	for i := range pod.Spec.InitContainers {
		addIndexEnv(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		addIndexEnv(&pod.Spec.Containers[i])
	}
	if hasBackoffLimitPerIndex(job) {
		failures, ignored := newIndexFailureCounts(job, c.replaces)
		pod.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(failures))
		if ignored > 0 {
			pod.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
		}
	}
}

// indexedGenerateName is "<job>-<index>-", the job name cut so that the
// whole fits maxGenerateNameLength.
func indexedGenerateName(jobName string, index int) string {
	suffix := "-" + strconv.Itoa(index) + "-"
	return truncate(jobName, maxGenerateNameLength-len(suffix)) + suffix
}

func addIndexEnv(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == completionIndexEnv {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{
		Name: completionIndexEnv,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.labels['" + batchv1.JobCompletionIndexAnnotation + "']",
		}},
	})
}

// newIndexFailureCounts are the failure counts of the pod replacing
// replaced: its counts plus its own failure (as ignored if an Ignore rule
// matched it).
func newIndexFailureCounts(job *batchv1.Job, replaced *corev1.Pod) (failures, ignored int32) {
	if replaced == nil {
		return 0, 0
	}
	failures, ignored = indexFailureCount(replaced), annotationInt(replaced, batchv1.JobIndexIgnoredFailureCountAnnotation)
	if countsAsFailure(job, replaced) {
		failures++
	} else {
		ignored++
	}
	return failures, ignored
}

// completionIndex is the pod's completion index annotation, or noIndex.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return noIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return noIndex
	}
	return ix
}

// hasValidIndex reports whether p counts for its Job: any pod of a
// NonIndexed Job, a pod of an Indexed Job with an index below completions.
func hasValidIndex(job *batchv1.Job, p *corev1.Pod) bool {
	if !kube.IsIndexedJob(&job.Spec) {
		return true
	}
	ix := completionIndex(p)
	return ix != noIndex && ix < int(ptr.Deref(job.Spec.Completions, 0))
}

func indexFailureCount(p *corev1.Pod) int32 {
	return annotationInt(p, batchv1.JobIndexFailureCountAnnotation)
}

func absoluteFailureCount(p *corev1.Pod) int32 {
	return indexFailureCount(p) + annotationInt(p, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

// annotationInt reads a non-negative int32 annotation; anything else is 0.
func annotationInt(p *corev1.Pod, key string) int32 {
	n, err := strconv.Atoi(p.Annotations[key])
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int32(n)
}

func indexesOf(pods []*corev1.Pod) map[int]bool {
	out := map[int]bool{}
	for _, p := range pods {
		if ix := completionIndex(p); ix != noIndex {
			out[ix] = true
		}
	}
	return out
}

func keys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
