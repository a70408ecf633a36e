package api

import (
	"reflect"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// cronJobResource is batch/v1 cronjobs: Jobs started on a schedule by the
// CronJob controller.
var cronJobResource = &resource{
	gv:                   batchV1,
	kind:                 "CronJob",
	plural:               "cronjobs",
	singular:             "cronjob",
	shortNames:           []string{"cj"},
	categories:           []string{"all"},
	store:                db.CronJobs,
	goType:               reflect.TypeOf(batchv1.CronJob{}),
	listType:             reflect.TypeOf(batchv1.CronJobList{}),
	newList:              newCronJobList,
	fields:               objectFields,
	columns:              cronJobColumns,
	cells:                func(obj db.Object, now time.Time) []any { return cronJobCells(obj.(*batchv1.CronJob), now) },
	prepareCreate:        func(_ *server, obj db.Object) { kube.PrepareCronJobForCreate(obj.(*batchv1.CronJob)) },
	validateCreate:       validateAs(kube.ValidateCronJob),
	prepareUpdate:        prepareUpdateAs(kube.PrepareCronJobForUpdate, kube.PrepareCronJobForStatusUpdate),
	validateUpdate:       validateUpdateAs(kube.ValidateCronJobUpdate),
	validateStatusUpdate: func(db.Object, db.Object) field.ErrorList { return nil },
	spec:                 func(obj db.Object) any { return obj.(*batchv1.CronJob).Spec },
	// NOTE: unlike Jobs, kube's CronJob strategy deletes the dependents
	// (the CronJob's Jobs) in the background by default.
	defaultPropagation: metav1.DeletePropagationBackground,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
}

func newCronJobList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &batchv1.CronJobList{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJobList"}, ListMeta: meta,
		Items: listItems[batchv1.CronJob](items)}
}

// cronJobColumns are kube's CronJob columns (priority 1 = kubectl -o wide).
var cronJobColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Schedule", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]},
	{Name: "Timezone", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]},
	{Name: "Suspend", Type: "boolean", Description: batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]},
	{Name: "Active", Type: "integer", Description: batchv1.CronJobStatus{}.SwaggerDoc()["active"]},
	{Name: "Last Schedule", Type: "string", Description: batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]},
	ageColumn,
	{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
	{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
	{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
}

// cronJobCells is one CronJob's row, as kube's printer makes it.
func cronJobCells(cj *batchv1.CronJob, now time.Time) []any {
	lastSchedule := "<none>"
	if t := cj.Status.LastScheduleTime; t != nil {
		lastSchedule = age(*t, now)
	}
	timeZone := "<none>"
	if cj.Spec.TimeZone != nil {
		timeZone = *cj.Spec.TimeZone
	}
	suspend := "<unset>"
	if cj.Spec.Suspend != nil {
		suspend = "False"
		if *cj.Spec.Suspend {
			suspend = "True"
		}
	}
	names, images := containerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
	return []any{cj.Name, cj.Spec.Schedule, timeZone, suspend, int64(len(cj.Status.Active)), lastSchedule,
		age(cj.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector)}
}
