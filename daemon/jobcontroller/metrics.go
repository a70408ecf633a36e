package jobcontroller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/kube"
)

// Metrics are the Job controller's Prometheus metrics, with the names,
// labels and buckets of Kubernetes 1.34's pkg/controller/job/metrics.
type Metrics struct {
	syncDuration        *prometheus.HistogramVec
	syncs               *prometheus.CounterVec
	jobsFinished        *prometheus.CounterVec
	podsFinished        *prometheus.CounterVec
	failurePolicy       *prometheus.CounterVec
	trackingFinalizer   *prometheus.CounterVec
	finishedIndexes     *prometheus.CounterVec
	podsCreation        *prometheus.CounterVec
	finishedWithTracker finishedTracked
}

// The values of the action label of the sync metrics (Kubernetes'
// JobSyncAction…).
const (
	actionReconciling = "reconciling"
	actionTracking    = "tracking"
	actionPodsCreated = "pods_created"
	actionPodsDeleted = "pods_deleted"
)

// NewMetrics creates the Job controller's metrics and registers them with
// reg (nil = kept unregistered, for tests that do not scrape).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	const subsystem = "job_controller"
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: subsystem, Name: name, Help: help}, labels)
	}
	m := &Metrics{
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: subsystem, Name: "job_sync_duration_seconds", Help: "The time it took to sync a job",
			Buckets: prometheus.ExponentialBuckets(0.004, 2, 15),
		}, []string{"completion_mode", "result", "action"}),
		syncs:        counter("job_syncs_total", "The number of job syncs", "completion_mode", "result", "action"),
		jobsFinished: counter("jobs_finished_total", "The number of finished jobs", "completion_mode", "result", "reason"),
		podsFinished: counter("job_pods_finished_total", "The number of finished Pods that are fully tracked", "completion_mode", "result"),
		failurePolicy: counter("pod_failures_handled_by_failure_policy_total",
			"The number of failed Pods handled by failure policy with respect to the failure policy action applied based on the matched rule.", "action"),
		trackingFinalizer: counter("terminated_pods_tracking_finalizer_total",
			"The number of terminated pods (phase=Failed|Succeeded) that have the finalizer batch.kubernetes.io/job-tracking", "event"),
		finishedIndexes: counter("job_finished_indexes_total", "The number of finished indexes.", "status", "backoffLimit"),
		podsCreation: counter("job_pods_creation_total",
			"The number of Pods created by the Job controller labelled with a reason for the Pod creation.", "reason", "status"),
		finishedWithTracker: finishedTracked{pods: map[types.UID]bool{}},
	}
	if reg != nil {
		reg.MustRegister(m.syncDuration, m.syncs, m.jobsFinished, m.podsFinished, m.failurePolicy,
			m.trackingFinalizer, m.finishedIndexes, m.podsCreation)
	}
	return m
}

// observeSync records one sync of a Job: its duration, its result and what
// it did (Kubernetes' deferred recording in syncJob).
func (m *Metrics) observeSync(res syncResult, start time.Time, now time.Time, err error) {
	if res.completionMode == "" {
		return
	}
	result := "success"
	if err != nil {
		result = "error"
	}
	action := syncAction(res)
	m.syncDuration.WithLabelValues(res.completionMode, result, action).Observe(now.Sub(start).Seconds())
	m.syncs.WithLabelValues(res.completionMode, result, action).Inc()
}

// syncAction names what a sync did as Kubernetes' manageJob reports it:
// reconciling when the Job was not managed (finished, finishing, or not
// ours), else pods_deleted, pods_created or tracking.
func syncAction(res syncResult) string {
	switch {
	case res.plan == nil || res.plan.finishing:
		return actionReconciling
	case len(res.plan.deletes) > 0:
		return actionPodsDeleted
	case len(res.plan.creates) > 0:
		return actionPodsCreated
	}
	return actionTracking
}

// observeCommitted records what a committed sync changed: pods created or
// refused, pods counted, indexes finished, failure policy actions, and the
// Job's finishing.
func (m *Metrics) observeCommitted(res syncResult) {
	if res.job == nil || res.plan == nil {
		return
	}
	job, now := res.job, res.plan.status
	mode := res.completionMode
	reason := podCreationReason(job, now)
	if n := len(res.created); n > 0 {
		m.podsCreation.WithLabelValues(reason, "succeeded").Add(float64(n))
	}
	if n := len(res.refused); n > 0 {
		m.podsCreation.WithLabelValues(reason, "failed").Add(float64(n))
	}
	if kube.IsIndexedJob(&job.Spec) {
		completions := int(ptr.Deref(job.Spec.Completions, 0))
		backoffLabel := "global"
		if job.Spec.BackoffLimitPerIndex != nil {
			backoffLabel = "perIndex"
		}
		done := parseIntervals(now.CompletedIndexes, completions).total() - parseIntervals(res.beforeCounts.CompletedIndexes, completions).total()
		m.finishedIndexes.WithLabelValues("succeeded", backoffLabel).Add(float64(max(done, 0)))
		m.podsFinished.WithLabelValues(mode, "succeeded").Add(float64(max(done, 0)))
		if job.Spec.BackoffLimitPerIndex != nil {
			failed := parseIntervals(ptr.Deref(now.FailedIndexes, ""), completions).total() -
				parseIntervals(ptr.Deref(res.beforeCounts.FailedIndexes, ""), completions).total()
			if failed > 0 {
				m.finishedIndexes.WithLabelValues("failed", backoffLabel).Add(float64(failed))
			}
		}
	} else {
		m.podsFinished.WithLabelValues(mode, "succeeded").Add(float64(max(now.Succeeded-res.beforeCounts.Succeeded, 0)))
	}
	m.podsFinished.WithLabelValues(mode, "failed").Add(float64(max(now.Failed-res.beforeCounts.Failed, 0)))
	for action, n := range failurePolicyActions(job, res.plan.release) {
		m.failurePolicy.WithLabelValues(action).Add(float64(n))
	}
	if c := newlyTrue(res.before, now.Conditions, batchv1.JobComplete); c != nil {
		m.jobsFinished.WithLabelValues(mode, "succeeded", c.Reason).Inc()
	}
	if c := newlyTrue(res.before, now.Conditions, batchv1.JobFailed); c != nil {
		m.jobsFinished.WithLabelValues(mode, "failed", c.Reason).Inc()
	}
}

// podCreationReason is the reason label of job_pods_creation_total:
// recreate_failed when only failed pods are replaced and some failed,
// recreate_terminating_or_failed when some failed or are terminating, new
// otherwise (Kubernetes' recordJobPodsCreationTotal).
func podCreationReason(job *batchv1.Job, status batchv1.JobStatus) string {
	switch {
	case ptr.Deref(job.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed) == batchv1.Failed && status.Failed > 0:
		return "recreate_failed"
	case status.Failed > 0 || ptr.Deref(status.Terminating, 0) > 0:
		return "recreate_terminating_or_failed"
	}
	return "new"
}

// failurePolicyActions counts the podFailurePolicy actions that matched the
// failed pods a sync counts (their finalizer comes off).
func failurePolicyActions(job *batchv1.Job, counted []*corev1.Pod) map[string]int {
	if job.Spec.PodFailurePolicy == nil {
		return nil
	}
	out := map[string]int{}
	for _, p := range counted {
		if !isPodFailed(p, job) || !hasValidIndex(job, p) {
			continue
		}
		if m := matchFailurePolicy(job.Spec.PodFailurePolicy, p); m.action != "" {
			out[string(m.action)]++
		}
	}
	return out
}

// observePod records a pod's change into or out of "finished and still
// carrying the tracking finalizer" (Kubernetes'
// recordFinishedPodWithTrackingFinalizer); gone is true when it was deleted.
func (m *Metrics) observePod(p *corev1.Pod, gone bool) {
	is := !gone && kube.IsPodTerminal(p) && hasTrackingFinalizer(p)
	if was := m.finishedWithTracker.set(p.UID, is); was == is {
		return
	}
	event := "delete"
	if is {
		event = "add"
	}
	m.trackingFinalizer.WithLabelValues(event).Inc()
}

// finishedTracked remembers the pods seen finished with the tracking
// finalizer, as the informer's old object tells Kubernetes' controller.
type finishedTracked struct {
	mu   sync.Mutex
	pods map[types.UID]bool
}

// set records whether uid is finished with the finalizer and returns what
// it was.
func (f *finishedTracked) set(uid types.UID, is bool) (was bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	was = f.pods[uid]
	if is {
		f.pods[uid] = true
	} else {
		delete(f.pods, uid)
	}
	return was
}
