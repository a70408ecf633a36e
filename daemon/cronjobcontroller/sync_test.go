package cronjobcontroller

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

func openStore(t *testing.T) *db.Store {
	t.Helper()
	s, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// storedCronJob stores a CronJob of schedule in namespace ns, created at
// created, and returns it as stored.
func storedCronJob(t *testing.T, s *db.Store, schedule string, created time.Time) *batchv1.CronJob {
	t.Helper()
	if err := s.Create(db.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}); err != nil {
		t.Fatal(err)
	}
	cj := scheduledCronJob(schedule, created, nil)
	cj.Spec.JobTemplate.Spec.Template.Spec = corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35"}}}
	kube.PrepareCronJobForCreate(cj)
	if err := s.Create(db.CronJobs, cj); err != nil {
		t.Fatal(err)
	}
	return cj
}

func listJobs(t *testing.T, s *db.Store) []*batchv1.Job {
	t.Helper()
	objs, _, err := s.List(db.Jobs, "ns", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*batchv1.Job, len(objs))
	for i, o := range objs {
		out[i] = o.(*batchv1.Job)
	}
	return out
}

// TestSyncThroughTheStore: a due CronJob's Job is created through the Job
// create strategy and recorded in the CronJob's status in one write; a
// second sync of the same minute starts nothing; the Jobs of a deleted
// CronJob go.
func TestSyncThroughTheStore(t *testing.T) {
	s := openStore(t)
	clk := clocktesting.NewFakeClock(at("10:04:00"))
	cj := storedCronJob(t, s, "*/5 * * * *", at("10:01:00"))
	c := New(Config{Store: s, Clock: clk, Jobs: kube.JobStrategy{NamespaceLifecycle: true}})
	k := key{"ns", "cj"}
	ctx := context.Background()

	after, err := c.sync(ctx, k)
	if err != nil || after == nil || *after != time.Minute+nextScheduleDelta || len(listJobs(t, s)) != 0 {
		t.Fatalf("before the time: after %v, err %v, jobs %d", after, err, len(listJobs(t, s)))
	}
	clk.SetTime(at("10:05:00"))
	if _, err := c.sync(ctx, k); err != nil {
		t.Fatal(err)
	}
	jobs := listJobs(t, s)
	if len(jobs) != 1 {
		t.Fatalf("%d jobs", len(jobs))
	}
	job := jobs[0]
	if want := kube.CronJobJobName(cj, at("10:05:00")); job.Name != want {
		t.Errorf("job %s, want %s", job.Name, want)
	}
	if job.Spec.Selector == nil || job.Labels[batchv1.JobNameLabel] != job.Name || job.Spec.BackoffLimit == nil {
		t.Errorf("the Job did not go through the create strategy: %+v", job)
	}
	if got := job.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-11-25T10:05:00Z" {
		t.Errorf("scheduled timestamp %q", got)
	}
	if !metav1.IsControlledBy(job, cj) {
		t.Errorf("owners %+v", job.OwnerReferences)
	}
	got, err := s.Get(db.CronJobs, "ns", "cj")
	if err != nil {
		t.Fatal(err)
	}
	st := got.(*batchv1.CronJob).Status
	if len(st.Active) != 1 || st.Active[0].UID != job.UID || st.Active[0].ResourceVersion == "" || !st.LastScheduleTime.Time.Equal(at("10:05:00")) {
		t.Errorf("status %+v", st)
	}

	// The same minute again: nothing new, as after a restart.
	clk.SetTime(at("10:05:30"))
	if _, err := c.sync(ctx, k); err != nil {
		t.Fatal(err)
	}
	if n := len(listJobs(t, s)); n != 1 {
		t.Errorf("%d jobs after a second sync of the minute", n)
	}

	// A CronJob created again under the name: the old one's Jobs, which
	// the watch indexed, go.
	for _, j := range listJobs(t, s) {
		c.index.observe(watch.Added, j)
	}
	if _, err := s.Delete(db.CronJobs, "ns", "cj"); err != nil {
		t.Fatal(err)
	}
	again := scheduledCronJob("0 0 1 1 *", at("10:06:00"), nil)
	kube.PrepareCronJobForCreate(again)
	if err := s.Create(db.CronJobs, again); err != nil {
		t.Fatal(err)
	}
	if _, err := c.sync(ctx, k); err != nil {
		t.Fatal(err)
	}
	for _, j := range listJobs(t, s) {
		t.Errorf("job %s of a deleted CronJob left", j.Name)
	}
}
