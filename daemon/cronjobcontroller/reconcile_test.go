package cronjobcontroller

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// fakeJobs keeps Jobs by name and notes what a sync did.
type fakeJobs struct {
	byName  map[string]*batchv1.Job
	created []string
	deleted []string
	refuse  error // create's error, if set
}

func (f *fakeJobs) get(name string) (*batchv1.Job, error) { return f.byName[name], nil }

func (f *fakeJobs) create(job *batchv1.Job) error {
	if f.refuse != nil {
		return f.refuse
	}
	if f.byName[job.Name] != nil {
		return apierrors.NewAlreadyExists(batchv1.Resource("jobs"), job.Name)
	}
	job.UID = types.UID("uid-" + job.Name)
	f.byName[job.Name] = job
	f.created = append(f.created, job.Name)
	return nil
}

func (f *fakeJobs) delete(job *batchv1.Job) error {
	delete(f.byName, job.Name)
	f.deleted = append(f.deleted, job.Name)
	return nil
}

// ownedJob is a Job of cj; started is its start time ("" = not started);
// finished is "Complete", "Failed" or "".
func ownedJob(cj *batchv1.CronJob, name, started string, finished batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cj.Namespace, UID: types.UID("uid-" + name),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}}}
	if started != "" {
		j.Status.StartTime = &metav1.Time{Time: at(started)}
	}
	if finished != "" {
		j.Status.Conditions = []batchv1.JobCondition{{Type: finished, Status: corev1.ConditionTrue}}
		if finished == batchv1.JobComplete {
			j.Status.CompletionTime = &metav1.Time{Time: at(started).Add(time.Minute)}
		}
	}
	return j
}

func activeRef(name string) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: "Job", Namespace: "ns", Name: name, UID: types.UID("uid-" + name), APIVersion: "batch/v1"}
}

func TestReconcile(t *testing.T) {
	minute := func(hhmm string) string { return fmt.Sprint(at(hhmm+":00").Unix() / 60) }
	tests := map[string]struct {
		cj      func(*batchv1.CronJob)
		jobs    func(*batchv1.CronJob) []*batchv1.Job
		now     time.Time
		refuse  error
		created []string
		deleted []string
		active  []string
		last    *time.Time
		events  []string
		after   *time.Duration
		wantErr bool
	}{
		"nothing due": {now: at("10:04:00"), after: ptr.To(time.Minute + nextScheduleDelta)},
		"due: a Job named for the minute": {now: at("10:05:00"),
			created: []string{"cj-" + minute("10:05")}, active: []string{"cj-" + minute("10:05")}, last: ptrTime(at("10:05:00")),
			events: []string{"Normal SuccessfulCreate Created job cj-" + minute("10:05")},
			after:  ptr.To(5*time.Minute + nextScheduleDelta)},
		"the time is taken already": {now: at("10:05:30"),
			cj: func(cj *batchv1.CronJob) {
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:05:00")}
			},
			last: ptrTime(at("10:05:00")), after: ptr.To(4*time.Minute + 30*time.Second + nextScheduleDelta)},
		"a Job of ours made, status lost (killed between)": {now: at("10:05:10"),
			jobs: func(cj *batchv1.CronJob) []*batchv1.Job {
				return []*batchv1.Job{ownedJob(cj, "cj-"+minute("10:05"), "10:05:01", "")}
			},
			active: []string{"cj-" + minute("10:05")}, last: ptrTime(at("10:05:00")),
			events: []string{"Warning UnexpectedJob Saw a job that the controller did not create or forgot: cj-" + minute("10:05")},
			after:  ptr.To(4*time.Minute + 50*time.Second + nextScheduleDelta)},
		"Forbid with a Job running": {now: at("10:10:00"),
			cj: func(cj *batchv1.CronJob) {
				cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:05:00")}
				cj.Status.Active = []corev1.ObjectReference{activeRef("a")}
			},
			jobs:   func(cj *batchv1.CronJob) []*batchv1.Job { return []*batchv1.Job{ownedJob(cj, "a", "10:05:00", "")} },
			active: []string{"a"}, last: ptrTime(at("10:05:00")),
			events: []string{"Normal JobAlreadyActive Not starting job because prior execution is running and concurrency policy is Forbid"},
			after:  ptr.To(5*time.Minute + nextScheduleDelta)},
		"Forbid once the Job finished": {now: at("10:10:00"),
			cj: func(cj *batchv1.CronJob) {
				cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:05:00")}
				cj.Status.Active = []corev1.ObjectReference{activeRef("a")}
			},
			jobs: func(cj *batchv1.CronJob) []*batchv1.Job {
				return []*batchv1.Job{ownedJob(cj, "a", "10:05:00", batchv1.JobFailed)}
			},
			created: []string{"cj-" + minute("10:10")}, active: []string{"cj-" + minute("10:10")}, last: ptrTime(at("10:10:00")),
			events: []string{"Normal SawCompletedJob Saw completed job: a, condition: Failed", "Normal SuccessfulCreate Created job cj-" + minute("10:10")},
			after:  ptr.To(5*time.Minute + nextScheduleDelta)},
		"Replace": {now: at("10:10:00"),
			cj: func(cj *batchv1.CronJob) {
				cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:05:00")}
				cj.Status.Active = []corev1.ObjectReference{activeRef("a")}
			},
			jobs:    func(cj *batchv1.CronJob) []*batchv1.Job { return []*batchv1.Job{ownedJob(cj, "a", "10:05:00", "")} },
			deleted: []string{"a"}, created: []string{"cj-" + minute("10:10")}, active: []string{"cj-" + minute("10:10")}, last: ptrTime(at("10:10:00")),
			events: []string{"Normal SuccessfulDelete Deleted job a", "Normal SuccessfulCreate Created job cj-" + minute("10:10")},
			after:  ptr.To(5*time.Minute + nextScheduleDelta)},
		"Allow runs them side by side": {now: at("10:10:00"),
			cj: func(cj *batchv1.CronJob) {
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:05:00")}
				cj.Status.Active = []corev1.ObjectReference{activeRef("a")}
			},
			jobs:    func(cj *batchv1.CronJob) []*batchv1.Job { return []*batchv1.Job{ownedJob(cj, "a", "10:05:00", "")} },
			created: []string{"cj-" + minute("10:10")}, active: []string{"a", "cj-" + minute("10:10")}, last: ptrTime(at("10:10:00")),
			events: []string{"Normal SuccessfulCreate Created job cj-" + minute("10:10")},
			after:  ptr.To(5*time.Minute + nextScheduleDelta)},
		"suspended": {now: at("10:10:00"), cj: func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr.To(true) }},
		"back after an hour down: one Job, the most recent": {now: at("11:02:00"),
			cj: func(cj *batchv1.CronJob) {
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:00:00")}
			},
			created: []string{"cj-" + minute("11:00")}, active: []string{"cj-" + minute("11:00")}, last: ptrTime(at("11:00:00")),
			events: []string{"Normal SuccessfulCreate Created job cj-" + minute("11:00")},
			after:  ptr.To(3*time.Minute + nextScheduleDelta)},
		"back past the starting deadline": {now: at("11:04:00"),
			cj: func(cj *batchv1.CronJob) {
				cj.Spec.StartingDeadlineSeconds = ptr.To(int64(60))
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:00:00")}
			},
			last: ptrTime(at("10:00:00")), after: ptr.To(time.Minute + nextScheduleDelta)},
		"the clock set back before the last start": {now: at("09:30:00"),
			cj: func(cj *batchv1.CronJob) {
				cj.CreationTimestamp = metav1.NewTime(at("09:00:00"))
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:05:00")}
			},
			last: ptrTime(at("10:05:00")), after: ptr.To(40*time.Minute + nextScheduleDelta)},
		"too many missed": {now: at("23:59:30"),
			cj: func(cj *batchv1.CronJob) {
				cj.Spec.Schedule = "* * * * *"
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:00:00")}
			},
			created: []string{"cj-" + minute("23:59")}, active: []string{"cj-" + minute("23:59")}, last: ptrTime(at("23:59:00")),
			events: []string{"Warning TooManyMissedTimes too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
				"Normal SuccessfulCreate Created job cj-" + minute("23:59")},
			after: ptr.To(30*time.Second + nextScheduleDelta)},
		"an active Job gone": {now: at("10:06:00"),
			cj: func(cj *batchv1.CronJob) {
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:05:00")}
				cj.Status.Active = []corev1.ObjectReference{activeRef("gone")}
			},
			last: ptrTime(at("10:05:00")), events: []string{"Normal MissingJob Active job went missing: gone"},
			after: ptr.To(4*time.Minute + nextScheduleDelta)},
		"history limits": {now: at("10:06:00"),
			cj: func(cj *batchv1.CronJob) {
				cj.Spec.SuccessfulJobsHistoryLimit = ptr.To(int32(2))
				cj.Spec.FailedJobsHistoryLimit = ptr.To(int32(0))
				cj.Status.LastScheduleTime = &metav1.Time{Time: at("10:05:00")}
			},
			jobs: func(cj *batchv1.CronJob) []*batchv1.Job {
				return []*batchv1.Job{
					ownedJob(cj, "ok-3", "10:03:00", batchv1.JobComplete), ownedJob(cj, "ok-1", "10:01:00", batchv1.JobComplete),
					ownedJob(cj, "ok-2", "10:02:00", batchv1.JobComplete), ownedJob(cj, "bad", "10:04:00", batchv1.JobFailed),
					ownedJob(cj, "running", "10:05:00", ""),
				}
			},
			deleted: []string{"ok-1", "bad"}, last: ptrTime(at("10:05:00")),
			events: []string{"Normal SuccessfulDelete Deleted job ok-1", "Normal SuccessfulDelete Deleted job bad",
				"Warning UnexpectedJob Saw a job that the controller did not create or forgot: running"},
			after: ptr.To(4*time.Minute + nextScheduleDelta)},
		"the Job template refused": {now: at("10:05:00"), refuse: apierrors.NewInvalid(batchv1.SchemeGroupVersion.WithKind("Job").GroupKind(), "x", nil),
			events:  []string{`Warning FailedCreate Error creating job: Job.batch "x" is invalid`},
			wantErr: true},
		"an unknown time zone": {now: at("10:05:00"), cj: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Mars/Olympus") },
			events: []string{`Warning UnknownTimeZone invalid timeZone: "Mars/Olympus": unknown time zone Mars/Olympus`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cj := scheduledCronJob("*/5 * * * *", at("10:01:00"), nil)
			cj.UID = "cj-uid"
			if tc.cj != nil {
				tc.cj(cj)
			}
			f := &fakeJobs{byName: map[string]*batchv1.Job{}, refuse: tc.refuse}
			var owned []*batchv1.Job
			if tc.jobs != nil {
				owned = tc.jobs(cj)
			}
			for _, j := range owned {
				f.byName[j.Name] = j
			}
			r := &reconciler{cj: cj.DeepCopy(), owned: owned, now: tc.now, jobs: f}
			after, err := r.reconcile()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v", err)
			}
			var events []string
			for _, ev := range r.events {
				events = append(events, ev.typ+" "+ev.reason+" "+ev.message)
			}
			var active []string
			for _, ref := range r.cj.Status.Active {
				active = append(active, ref.Name)
			}
			if diff := cmp.Diff(tc.events, events); diff != "" {
				t.Errorf("events (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.created, f.created); diff != "" {
				t.Errorf("created (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.deleted, f.deleted); diff != "" {
				t.Errorf("deleted (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.active, active); diff != "" {
				t.Errorf("active (-want,+got):\n%s", diff)
			}
			if got := r.cj.Status.LastScheduleTime; (got == nil) != (tc.last == nil) || got != nil && !got.Time.Equal(*tc.last) {
				t.Errorf("lastScheduleTime %v, want %v", got, tc.last)
			}
			if (after == nil) != (tc.after == nil) || after != nil && *after != *tc.after {
				t.Errorf("sync again after %v, want %v", ptr.Deref(after, -1), ptr.Deref(tc.after, -1))
			}
			if changed := !slices.Equal(active, names(cj.Status.Active)) || !ptr.Equal(r.cj.Status.LastScheduleTime, cj.Status.LastScheduleTime); changed && !r.statusChanged {
				t.Error("the status changed but is not written")
			}
		})
	}
}

func names(refs []corev1.ObjectReference) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Name)
	}
	return out
}
