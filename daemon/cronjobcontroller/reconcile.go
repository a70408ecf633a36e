package cronjobcontroller

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/kube"
)

// jobs is what a sync may do to Jobs, inside the sync's transaction.
type jobs interface {
	// get returns the Job of that name in the CronJob's namespace, nil if
	// there is none.
	get(name string) (*batchv1.Job, error)
	// create stores a new Job through the API's create strategy; the Job
	// gets its UID and resourceVersion.
	create(job *batchv1.Job) error
	// delete deletes a Job with background propagation (its pods follow).
	delete(job *batchv1.Job) error
}

// event is an Event on the CronJob, recorded once the sync committed.
type event struct{ typ, reason, message string }

// reconciler is one sync of one CronJob: kube's cleanupFinishedJobs and
// syncCronJob over a copy of the CronJob, whose status it changes in place.
type reconciler struct {
	cj     *batchv1.CronJob
	owned  []*batchv1.Job // the Jobs whose controller is cj
	now    time.Time
	jobs   jobs
	events []event
	// created is the Job the sync created, if any.
	created *batchv1.Job
	// statusChanged: cj's status must be written.
	statusChanged bool
}

func (r *reconciler) record(typ, reason, format string, args ...any) {
	r.events = append(r.events, event{typ, reason, fmt.Sprintf(format, args...)})
}

// reconcile trims the history, then syncs the schedule. It returns when to
// sync again (nil: only on a change) and the error that makes the sync be
// retried; the status is to be written whatever the error.
func (r *reconciler) reconcile() (*time.Duration, error) {
	if err := r.trimHistory(); err != nil {
		return nil, err
	}
	return r.sync()
}

// sync is kube's syncCronJob: account for the owned Jobs, then start the
// most recent due start time, if any, under the concurrency policy.
func (r *reconciler) sync() (*time.Duration, error) {
	cj := r.cj
	r.observeJobs()
	if cj.DeletionTimestamp != nil {
		return nil, nil
	}
	if tz := cj.Spec.TimeZone; tz != nil {
		if _, err := time.LoadLocation(*tz); err != nil {
			r.record(corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *tz, err)
			return nil, nil
		}
	}
	if ptr.Deref(cj.Spec.Suspend, false) {
		return nil, nil
	}
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		r.record(corev1.EventTypeWarning, "UnsupportedSchedule", "CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule)
	}
	sched, err := kube.CronJobSchedule(cj)
	if err != nil {
		r.record(corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", cj.Spec.Schedule, err)
		return nil, nil
	}
	_, scheduled, m, err := mostRecentScheduleTime(cj, r.now, sched, true)
	if err != nil {
		r.record(corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, err)
		return nil, nil
	}
	next := func() *time.Duration { return ptr.To(nextScheduleDuration(cj, r.now, sched)) }
	if scheduled == nil {
		return next(), nil
	}
	if m == manyMissed {
		r.record(corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil && scheduled.Add(time.Duration(*d)*time.Second).Before(r.now) {
		r.record(corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", scheduled.UTC().Format(time.RFC1123Z))
		return next(), nil
	}
	name := kube.CronJobJobName(cj, *scheduled)
	if r.activeByName(name) || (cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(*scheduled)) {
		return next(), nil // this start time is taken care of
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent && len(cj.Status.Active) > 0 {
		r.record(corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		return next(), nil
	}
	if cj.Spec.ConcurrencyPolicy == batchv1.ReplaceConcurrent {
		if err := r.replaceActive(); err != nil {
			return nil, err
		}
	}
	job, err := r.start(name, *scheduled)
	if job == nil || err != nil {
		return nil, err
	}
	cj.Status.Active = append(cj.Status.Active, jobRef(job))
	cj.Status.LastScheduleTime = &metav1.Time{Time: *scheduled}
	r.statusChanged = true
	return next(), nil
}

// observeJobs brings status.active and lastSuccessfulTime up to date with
// the owned Jobs: finished ones leave the active list, ones that no longer
// exist too.
func (r *reconciler) observeJobs() {
	cj := r.cj
	owned := map[types.UID]bool{}
	for _, j := range r.owned {
		owned[j.UID] = true
		active := r.activeByUID(j.UID)
		finished := kube.JobFinishedCondition(j)
		switch {
		case finished == nil && !active:
			// NOTE: as kube, a Job the controller did not start (or started
			// and crashed before recording) is reported, not adopted.
			r.record(corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case finished != nil && active:
			r.removeActive(j.UID)
			r.record(corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, condition: %v", j.Name, finished.Type)
		}
		if finished != nil && finished.Type == batchv1.JobComplete && j.Status.CompletionTime != nil {
			if last := cj.Status.LastSuccessfulTime; last == nil || j.Status.CompletionTime.After(last.Time) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
				r.statusChanged = true
			}
		}
	}
	for _, ref := range slices.Clone(cj.Status.Active) {
		if !owned[ref.UID] {
			r.record(corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", ref.Name)
			r.removeActive(ref.UID)
		}
	}
}

// replaceActive deletes the active Jobs for the Replace policy.
func (r *reconciler) replaceActive() error {
	for _, ref := range slices.Clone(r.cj.Status.Active) {
		job, err := r.jobs.get(ref.Name)
		if err != nil {
			r.record(corev1.EventTypeWarning, "FailedGet", "Get job: %v", err)
			return err
		}
		if job == nil {
			r.record(corev1.EventTypeWarning, "FailedGet", "Get job: %v", apierrors.NewNotFound(batchv1.Resource("jobs"), ref.Name))
			return fmt.Errorf("getting job %s: not found", ref.Name)
		}
		if err := r.deleteJob(job); err != nil {
			return fmt.Errorf("could not replace job %s/%s: %w", job.Namespace, job.Name, err)
		}
	}
	return nil
}

// start creates the Job of the scheduled time. It returns the Job to add
// to the active list, or nil when there is nothing to add: the name is
// taken by a Job this CronJob does not control, or by one already active.
func (r *reconciler) start(name string, scheduled time.Time) (*batchv1.Job, error) {
	cj := r.cj
	job, err := jobFromTemplate(cj, name, scheduled)
	if err != nil {
		return nil, err
	}
	err = r.jobs.create(job)
	switch {
	case err == nil:
		r.created = job
		r.record(corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", job.Name)
		return job, nil
	case apierrors.IsAlreadyExists(err):
		// NOTE: the deterministic name is the guard against starting a
		// time twice; a Job of ours not in the active list is recorded now.
		existing, err := r.jobs.get(name)
		if err != nil || existing == nil {
			return nil, err
		}
		if !metav1.IsControlledBy(existing, cj) || r.activeByUID(existing.UID) {
			return nil, nil
		}
		return existing, nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	}
	r.record(corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
	return nil, err
}

// jobFromTemplate is the Job a CronJob starts for a scheduled time (kube's
// getJobFromTemplate2): the template's labels, annotations and spec, the
// scheduled time in the CronJob's zone, and the CronJob as controller.
func jobFromTemplate(cj *batchv1.CronJob, name string, scheduled time.Time) (*batchv1.Job, error) {
	loc, err := time.LoadLocation(ptr.Deref(cj.Spec.TimeZone, ""))
	if err != nil {
		return nil, err
	}
	tmpl := cj.Spec.JobTemplate.DeepCopy()
	annotations := tmpl.Annotations
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	labels := tmpl.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       cj.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
		},
		Spec: tmpl.Spec,
	}, nil
}

// trimHistory is kube's cleanupFinishedJobs: the oldest finished Jobs
// beyond the history limits are deleted, successful and failed apart.
func (r *reconciler) trimHistory() error {
	var succeeded, failed []*batchv1.Job
	for _, j := range r.owned {
		switch c := kube.JobFinishedCondition(j); {
		case c == nil:
		case c.Type == batchv1.JobComplete:
			succeeded = append(succeeded, j)
		default:
			failed = append(failed, j)
		}
	}
	var errs []error
	if l := r.cj.Spec.SuccessfulJobsHistoryLimit; l != nil {
		errs = append(errs, r.deleteOldest(succeeded, int(*l)))
	}
	if l := r.cj.Spec.FailedJobsHistoryLimit; l != nil {
		errs = append(errs, r.deleteOldest(failed, int(*l)))
	}
	return errors.Join(errs...)
}

// deleteOldest deletes the Jobs of js beyond the keep newest, by start time
// (never started ones count as newest), names breaking ties.
func (r *reconciler) deleteOldest(js []*batchv1.Job, keep int) error {
	if len(js) <= keep {
		return nil
	}
	slices.SortFunc(js, compareStartTime)
	for _, j := range js[:len(js)-keep] {
		if err := r.deleteJob(j); err != nil {
			return err
		}
	}
	return nil
}

// compareStartTime orders Jobs as kube's byJobStartTime.
func compareStartTime(a, b *batchv1.Job) int {
	sa, sb := a.Status.StartTime, b.Status.StartTime
	switch {
	case sa == nil && sb != nil:
		return 1
	case sa != nil && sb == nil:
		return -1
	case sa.Equal(sb):
		return strings.Compare(a.Name, b.Name)
	case sa.Before(sb):
		return -1
	}
	return 1
}

// deleteJob deletes a Job and its reference in the active list.
func (r *reconciler) deleteJob(job *batchv1.Job) error {
	if err := r.jobs.delete(job); err != nil {
		r.record(corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		return err
	}
	r.removeActive(job.UID)
	r.owned = slices.DeleteFunc(r.owned, func(j *batchv1.Job) bool { return j.UID == job.UID })
	r.record(corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", job.Name)
	return nil
}

func (r *reconciler) activeByUID(uid types.UID) bool {
	return slices.ContainsFunc(r.cj.Status.Active, func(ref corev1.ObjectReference) bool { return ref.UID == uid })
}

func (r *reconciler) activeByName(name string) bool {
	return slices.ContainsFunc(r.cj.Status.Active, func(ref corev1.ObjectReference) bool {
		return ref.Name == name && ref.Namespace == r.cj.Namespace
	})
}

func (r *reconciler) removeActive(uid types.UID) {
	before := len(r.cj.Status.Active)
	r.cj.Status.Active = slices.DeleteFunc(r.cj.Status.Active, func(ref corev1.ObjectReference) bool { return ref.UID == uid })
	if len(r.cj.Status.Active) != before {
		r.statusChanged = true
	}
}

// jobRef is the active list's reference to a Job.
func jobRef(job *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{
		Kind:            "Job",
		Namespace:       job.Namespace,
		Name:            job.Name,
		UID:             job.UID,
		APIVersion:      batchv1.SchemeGroupVersion.String(),
		ResourceVersion: job.ResourceVersion,
	}
}
