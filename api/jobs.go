package api

import (
	"reflect"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// jobResource is batch/v1 jobs.
var jobResource = &resource{
	gv:                   batchV1,
	kind:                 "Job",
	plural:               "jobs",
	singular:             "job",
	store:                db.Jobs,
	goType:               reflect.TypeOf(batchv1.Job{}),
	listType:             reflect.TypeOf(batchv1.JobList{}),
	newList:              newJobList,
	fields:               jobFields,
	columns:              jobColumns,
	cells:                func(obj db.Object, now time.Time) []any { return jobCells(obj.(*batchv1.Job), now) },
	cellFields:           jobCellFields,
	prepareCreate:        func(_ *server, obj db.Object) { kube.PrepareJobForCreate(obj.(*batchv1.Job)) },
	validateCreate:       validateAs(kube.ValidateJob),
	prepareUpdate:        prepareUpdateAs(kube.PrepareJobForUpdate, kube.PrepareJobForStatusUpdate),
	validateUpdate:       validateUpdateAs(kube.ValidateJobUpdate),
	validateStatusUpdate: validateUpdateAs(kube.ValidateJobStatusUpdate),
	spec:                 func(obj db.Object) any { return obj.(*batchv1.Job).Spec },
	// NOTE: kube's job strategy defaults to orphaning the pods when a
	// batch/v1 Job is deleted without a propagation policy.
	defaultPropagation: metav1.DeletePropagationOrphan,
	deleteGrace:        func(db.Object, *int64) int64 { return 0 },
	categories:         []string{"all"},
	// NOTE: kube warns on the template when a Job is created (and when an
	// update changes its spec; the template's volumes never change).
	warnings: func(obj db.Object, created bool) []string {
		if !created {
			return nil
		}
		return kube.PodSourceWarnings(&obj.(*batchv1.Job).Spec.Template.Spec, field.NewPath("spec", "template"))
	},
}

func newJobList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &batchv1.JobList{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "JobList"}, ListMeta: meta,
		Items: listItems[batchv1.Job](items)}
}

// jobFields are the job fields usable in field selectors.
func jobFields(obj db.Object) fields.Set {
	f := objectFields(obj)
	f["status.successful"] = strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))
	return f
}

// jobColumns are kube's job columns (priority 1 = kubectl -o wide).
var jobColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Status", Type: "string", Description: "Status of the job."},
	{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
	{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
	ageColumn,
	{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
	{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
	{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
}

// jobCellFields are the fields jobCells reads.
var jobCellFields = projection{
	"metadata": {"name": nil, "creationTimestamp": nil, "deletionTimestamp": nil},
	"spec": {"completions": nil, "parallelism": nil, "selector": nil,
		"template": {"spec": {"containers": {"name": nil, "image": nil}}}},
	"status": {"conditions": {"type": nil, "status": nil}, "startTime": nil, "completionTime": nil, "succeeded": nil},
}

// jobCells is one job's row.
func jobCells(job *batchv1.Job, now time.Time) []any {
	names, images := containerCells(job.Spec.Template.Spec.Containers)
	return []any{
		job.Name,
		jobStatus(job),
		jobCompletions(job),
		jobDuration(job, now),
		age(job.CreationTimestamp, now),
		names,
		images,
		metav1.FormatLabelSelector(job.Spec.Selector),
	}
}

// jobStatus is the STATUS column, in kube's printer's order.
func jobStatus(job *batchv1.Job) string {
	switch {
	case kube.IsJobConditionTrue(job.Status.Conditions, batchv1.JobComplete):
		return "Complete"
	case kube.IsJobConditionTrue(job.Status.Conditions, batchv1.JobFailed):
		return "Failed"
	case job.DeletionTimestamp != nil:
		return "Terminating"
	case kube.IsJobConditionTrue(job.Status.Conditions, batchv1.JobSuspended):
		return "Suspended"
	case kube.IsJobConditionTrue(job.Status.Conditions, batchv1.JobFailureTarget):
		return "FailureTarget"
	}
	return "Running"
}

// jobCompletions is "succeeded/completions" ("n/1 of p" for a work queue).
func jobCompletions(job *batchv1.Job) string {
	if job.Spec.Completions != nil {
		return strconv.Itoa(int(job.Status.Succeeded)) + "/" + strconv.Itoa(int(*job.Spec.Completions))
	}
	if p := job.Spec.Parallelism; p != nil && *p > 1 {
		return strconv.Itoa(int(job.Status.Succeeded)) + "/1 of " + strconv.Itoa(int(*p))
	}
	return strconv.Itoa(int(job.Status.Succeeded)) + "/1"
}

// jobDuration is how long the job ran, or has been running.
func jobDuration(job *batchv1.Job, now time.Time) string {
	switch {
	case job.Status.StartTime == nil:
		return ""
	case job.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(job.Status.StartTime.Time))
	}
	return duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
}

// containerCells are the comma-separated container names and images.
func containerCells(cs []corev1.Container) (names, images string) {
	for i, c := range cs {
		if i > 0 {
			names += ","
			images += ","
		}
		names += c.Name
		images += c.Image
	}
	return names, images
}
