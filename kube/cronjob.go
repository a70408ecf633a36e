package kube

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
)

// CronJobNameMaxLength is the longest name a new CronJob may have: its Jobs
// are named "<cronjob>-<minutes since the epoch>", an 11-character suffix,
// and a Job's name must fit a 63-character label.
const CronJobNameMaxLength = 63 - 11

// PrepareCronJobForCreate is kube's CronJob strategy on create: no status,
// and the CronJob defaults.
func PrepareCronJobForCreate(cj *batchv1.CronJob) {
	cj.Status = batchv1.CronJobStatus{}
	dropGatedPodSpecFields(&cj.Spec.JobTemplate.Spec.Template.Spec, nil)
	defaultCronJob(cj)
}

// PrepareCronJobForUpdate keeps the stored status on an update of a CronJob
// and defaults its spec again.
func PrepareCronJobForUpdate(cj, old *batchv1.CronJob) {
	cj.Status = old.Status
	dropGatedPodSpecFields(&cj.Spec.JobTemplate.Spec.Template.Spec, &old.Spec.JobTemplate.Spec.Template.Spec)
	defaultCronJob(cj)
}

// PrepareCronJobForStatusUpdate keeps the stored spec on an update of a
// CronJob's status.
func PrepareCronJobForStatusUpdate(cj, old *batchv1.CronJob) { cj.Spec = old.Spec }

// defaultCronJob is kube's SetObjectDefaults_CronJob: the CronJob's own
// defaults and those of the pod template inside its Job template.
//
// NOTE: the JobSpec defaults (parallelism, backoffLimit, …) are not applied
// to the template: kube defaults them on each Job the controller creates.
func defaultCronJob(cj *batchv1.CronJob) {
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = ptr.To(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = ptr.To(int32(3))
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = ptr.To(int32(1))
	}
	defaultPodFailurePolicy(spec.JobTemplate.Spec.PodFailurePolicy)
	defaultPodSpec(&spec.JobTemplate.Spec.Template.Spec)
}

// CronJobSchedule parses the CronJob's schedule in its time zone, as kube's
// cronjob controller does: a timeZone becomes a "TZ=" prefix of the
// schedule; a schedule that carries TZ itself (accepted only from CronJobs
// stored before the timeZone field) keeps it. Standard five-field
// expressions and the @hourly style macros are accepted.
func CronJobSchedule(cj *batchv1.CronJob) (cron.Schedule, error) {
	return cron.ParseStandard(cronJobScheduleSpec(cj))
}

// cronJobScheduleSpec is the schedule string the parser reads (kube's
// formatSchedule).
func cronJobScheduleSpec(cj *batchv1.CronJob) string {
	if strings.Contains(cj.Spec.Schedule, "TZ") || cj.Spec.TimeZone == nil {
		return cj.Spec.Schedule
	}
	if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
		return cj.Spec.Schedule
	}
	return fmt.Sprintf("TZ=%s %s", *cj.Spec.TimeZone, cj.Spec.Schedule)
}

// CronJobJobName is the name of the Job a CronJob starts for scheduledTime:
// "<cronjob>-<minutes since the epoch>". It is deterministic so that a
// scheduled time can never be started twice: a second create is refused as
// AlreadyExists.
func CronJobJobName(cj *batchv1.CronJob, scheduledTime time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduledTime.Unix()/60)
}
