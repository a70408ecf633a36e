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
	decodeCells:          func(c *jsonCursor, obj db.Object) { decodeJobCells(c, obj.(*batchv1.Job)) },
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

// decodeJobCells reads into job the fields jobCells reads, from its stored
// JSON (TestStoredTableIsTheEncodedTable).
func decodeJobCells(c *jsonCursor, job *batchv1.Job) {
	c.fields(func(key []byte) {
		switch string(key) {
		case "metadata":
			decodeCellMetadata(c, &job.ObjectMeta)
		case "spec":
			c.fields(func(key []byte) {
				switch string(key) {
				case "completions":
					job.Spec.Completions = c.int32p()
				case "parallelism":
					job.Spec.Parallelism = c.int32p()
				case "selector":
					job.Spec.Selector = decodeLabelSelector(c)
				case "template":
					c.fields(func(key []byte) {
						if string(key) == "spec" {
							decodeContainerImages(c, &job.Spec.Template.Spec)
						}
					})
				}
			})
		case "status":
			c.fields(func(key []byte) {
				switch string(key) {
				case "conditions":
					c.each(func() {
						var cond batchv1.JobCondition
						c.fields(func(key []byte) {
							switch string(key) {
							case "type":
								cond.Type = batchv1.JobConditionType(c.str())
							case "status":
								cond.Status = corev1.ConditionStatus(c.str())
							}
						})
						job.Status.Conditions = append(job.Status.Conditions, cond)
					})
				case "startTime":
					job.Status.StartTime = c.timep()
				case "completionTime":
					job.Status.CompletionTime = c.timep()
				case "succeeded":
					job.Status.Succeeded = c.int32()
				}
			})
		}
	})
}

// decodeContainerImages reads the names and images of a pod spec's
// containers.
func decodeContainerImages(c *jsonCursor, spec *corev1.PodSpec) {
	c.fields(func(key []byte) {
		if string(key) != "containers" {
			return
		}
		c.each(func() {
			var ct corev1.Container
			c.fields(func(key []byte) {
				switch string(key) {
				case "name":
					ct.Name = c.str()
				case "image":
					ct.Image = c.str()
				}
			})
			spec.Containers = append(spec.Containers, ct)
		})
	})
}

// decodeLabelSelector reads a label selector (nil for null).
func decodeLabelSelector(c *jsonCursor) *metav1.LabelSelector {
	if c.null() {
		return nil
	}
	sel := &metav1.LabelSelector{}
	c.fields(func(key []byte) {
		switch string(key) {
		case "matchLabels":
			sel.MatchLabels = c.strMap()
		case "matchExpressions":
			c.each(func() {
				var req metav1.LabelSelectorRequirement
				c.fields(func(key []byte) {
					switch string(key) {
					case "key":
						req.Key = c.str()
					case "operator":
						req.Operator = metav1.LabelSelectorOperator(c.str())
					case "values":
						req.Values = c.strs()
					}
				})
				sel.MatchExpressions = append(sel.MatchExpressions, req)
			})
		}
	})
	return sel
}

// jobCells is one job's row. NOTE: a Table written from the stored JSON
// has only the fields decodeJobCells reads: read a new one here, read it
// there.
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
		formatLabelSelector(job.Spec.Selector),
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
