//go:build integration

package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/skiff-sh/skiff/failpoint"
)

// cronJob is a CronJob in the default namespace running `sh -c script`.
func cronJob(name, schedule, script string) *batchv1.CronJob {
	job := shJob("", script, 1, 1, 0, corev1.RestartPolicyNever)
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule:    schedule,
			JobTemplate: batchv1.JobTemplateSpec{Spec: job.Spec},
		},
	}
}

func createCronJob(t testing.TB, c kubernetes.Interface, cj *batchv1.CronJob) *batchv1.CronJob {
	t.Helper()
	got, err := c.BatchV1().CronJobs(cj.Namespace).Create(context.Background(), cj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating cronjob %s: %v", cj.Name, err)
	}
	return got
}

func getCronJob(t testing.TB, c kubernetes.Interface, name string) *batchv1.CronJob {
	t.Helper()
	cj, err := c.BatchV1().CronJobs("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cj
}

// cronJobsJobs are the Jobs whose controller is the CronJob with that UID,
// by name.
func cronJobsJobs(t testing.TB, c kubernetes.Interface, uid types.UID) []batchv1.Job {
	t.Helper()
	list, err := c.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if ref := metav1.GetControllerOf(&j); ref != nil && ref.UID == uid {
			out = append(out, j)
		}
	}
	slices.SortFunc(out, func(a, b batchv1.Job) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func jobNames(jobs []batchv1.Job) []string {
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	return names
}

// cronJobEvents are the "reason: message" of the Events on a CronJob.
func cronJobEvents(t testing.TB, c kubernetes.Interface, name string) []string {
	t.Helper()
	list, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=CronJob,involvedObject.name=" + name,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Source.Component != "cronjob-controller" {
			t.Errorf("event %s from %q", ev.Reason, ev.Source.Component)
		}
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return out
}

// waitCronJobEvent waits for an Event "reason: message" on the CronJob.
func waitCronJobEvent(t testing.TB, c kubernetes.Interface, name, want string) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("event %q on cronjob %s", want, name), func() (bool, error) {
		return slices.Contains(cronJobEvents(t, c, name), want), nil
	})
}

// jobNameAt is the name of the CronJob's Job of scheduled time at.
func jobNameAt(cronJob string, at time.Time) string {
	return fmt.Sprintf("%s-%d", cronJob, at.Unix()/60)
}

const applyCronJob = `apiVersion: batch/v1
kind: CronJob
metadata:
  name: applied
spec:
  schedule: "30 2 * * *"
  timeZone: Europe/Paris
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: backup
            image: busybox:1.35
            command: ["sh", "-c", "echo backing up"]
`

// TestCronJobAPI drives the CronJob API without waiting for a schedule:
// kubectl create cronjob and its defaults, kubectl get's columns, bad
// input, kubectl create job --from, the history limits, and deletion with
// each propagation.
func TestCronJobAPI(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client
	cjs := c.BatchV1().CronJobs("default")

	// A yearly schedule: nothing of this test waits for it.
	out := s.kubectl(t, "create", "cronjob", "tick", "--image=busybox:1.35", "--schedule=0 0 1 1 *", "--", "date")
	if !strings.Contains(out, "cronjob.batch/tick created") {
		t.Errorf("create cronjob said %q", out)
	}
	tick := getCronJob(t, c, "tick")
	if sp := tick.Spec; sp.ConcurrencyPolicy != batchv1.AllowConcurrent || sp.Suspend == nil || *sp.Suspend ||
		sp.SuccessfulJobsHistoryLimit == nil || *sp.SuccessfulJobsHistoryLimit != 3 || sp.FailedJobsHistoryLimit == nil || *sp.FailedJobsHistoryLimit != 1 {
		t.Errorf("defaults: %+v", sp)
	}
	if ps := tick.Spec.JobTemplate.Spec.Template.Spec; ps.DNSPolicy != corev1.DNSClusterFirst || ps.Containers[0].TerminationMessagePath != "/dev/termination-log" {
		t.Errorf("the template's pod spec is not defaulted: %+v", ps)
	}
	if tick.Spec.JobTemplate.Spec.BackoffLimit != nil {
		t.Errorf("the template's Job spec is defaulted (kube defaults each Job instead): backoffLimit %d", *tick.Spec.JobTemplate.Spec.BackoffLimit)
	}
	out = s.kubectl(t, "get", "cronjobs")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "tick 0 0 1 1 * <none> False 0 <none> ") {
		t.Errorf("kubectl get cronjobs:\n%s", out)
	}
	if out := s.kubectl(t, "describe", "cronjob", "tick"); !strings.Contains(out, "Schedule:") || !strings.Contains(out, "0 0 1 1 *") {
		t.Errorf("kubectl describe cronjob:\n%s", out)
	}
	if out := s.kubectl(t, "get", "cj", "-o", "wide"); !strings.Contains(out, "CONTAINERS") || !strings.Contains(out, "busybox:1.35") {
		t.Errorf("kubectl get cj -o wide:\n%s", out)
	}

	// kubectl create job --from: the manual annotation and the CronJob as
	// controller, run by the Job controller.
	if out := s.kubectl(t, "create", "job", "by-hand", "--from=cronjob/tick"); !strings.Contains(out, "job.batch/by-hand created") {
		t.Errorf("create job --from said %q", out)
	}
	byHand := waitJob(t, c, "default", "by-hand", batchv1.JobComplete, 90*time.Second)
	if byHand.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" {
		t.Errorf("annotations %v", byHand.Annotations)
	}
	if ref := metav1.GetControllerOf(byHand); ref == nil || ref.UID != tick.UID || ref.Kind != "CronJob" {
		t.Errorf("ownerReferences %+v", byHand.OwnerReferences)
	}

	t.Run("bad input", func(t *testing.T) {
		tests := map[string]struct {
			change func(*batchv1.CronJob)
			want   string
		}{
			"minute out of range": {func(cj *batchv1.CronJob) { cj.Spec.Schedule = "61 * * * *" },
				`CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`},
			"three fields": {func(cj *batchv1.CronJob) { cj.Spec.Schedule = "* * *" },
				`CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]`},
			"TZ in schedule": {func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=Europe/Paris 0 * * * *" },
				`CronJob.batch "bad" is invalid: spec.schedule: Invalid value: "TZ=Europe/Paris 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`},
			"unknown time zone": {func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr("Mars/Olympus") },
				`CronJob.batch "bad" is invalid: spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`},
			"negative deadline": {func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr(int64(-1)) },
				`CronJob.batch "bad" is invalid: spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0`},
			"negative history": {func(cj *batchv1.CronJob) { cj.Spec.FailedJobsHistoryLimit = ptr(int32(-2)) },
				`CronJob.batch "bad" is invalid: spec.failedJobsHistoryLimit: Invalid value: -2: must be greater than or equal to 0`},
			"bad policy": {func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" },
				`CronJob.batch "bad" is invalid: spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"`},
			"template restartPolicy": {func(cj *batchv1.CronJob) {
				cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			},
				`CronJob.batch "bad" is invalid: spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
			"template completions": {func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Completions = ptr(int32(-1)) },
				`CronJob.batch "bad" is invalid: spec.jobTemplate.spec.completions: Invalid value: -1: must be greater than or equal to 0`},
			"name too long": {func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("n", 53) },
				`CronJob.batch "` + strings.Repeat("n", 53) + `" is invalid: metadata.name: Invalid value: "` + strings.Repeat("n", 53) + `": must be no more than 52 characters`},
		}
		for name, tc := range tests {
			cj := cronJob("bad", "0 * * * *", "true")
			tc.change(cj)
			_, err := cjs.Create(ctx, cj, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || err.Error() != tc.want {
				t.Errorf("%s: %v\nwant 422 %s", name, err, tc.want)
			}
		}
		// A time zone of the tz database and a macro are fine.
		ok := cronJob("zoned", "@hourly", "true")
		ok.Spec.TimeZone = ptr("Asia/Kolkata")
		createCronJob(t, c, ok)
	})

	t.Run("clients", func(t *testing.T) {
		// kubectl apply validates against the OpenAPI documents, client
		// side and then server side (structured merge).
		manifest := filepath.Join(t.TempDir(), "cj.yaml")
		if err := os.WriteFile(manifest, []byte(applyCronJob), 0o600); err != nil {
			t.Fatal(err)
		}
		if out := s.kubectl(t, "apply", "-f", manifest); !strings.Contains(out, "cronjob.batch/applied created") {
			t.Errorf("apply said %q", out)
		}
		if out := s.kubectl(t, "apply", "--server-side", "-f", manifest); !strings.Contains(out, "serverside-applied") {
			t.Errorf("server-side apply said %q", out)
		}
		if tz := getCronJob(t, c, "applied").Spec.TimeZone; tz == nil || *tz != "Europe/Paris" {
			t.Errorf("timeZone %v", tz)
		}
		// client-go's default wire format is protobuf.
		pb, types := s.protobufClient()
		if _, err := pb.BatchV1().CronJobs("default").Create(ctx, cronJob("proto", "@weekly", "true"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if types.count("application/vnd.kubernetes.protobuf") == 0 {
			t.Error("no protobuf body was sent")
		}
		// The status subresource changes the status only.
		proto := getCronJob(t, c, "proto")
		proto.Spec.Schedule = "@daily"
		proto.Status.LastScheduleTime = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		got, err := cjs.UpdateStatus(ctx, proto, metav1.UpdateOptions{})
		if err != nil || got.Spec.Schedule != "@weekly" || got.Status.LastScheduleTime == nil {
			t.Errorf("status update: %v %+v", err, got)
		}
		// A namespace deleted takes its CronJobs along.
		createNamespace(t, c, "cron-ns")
		inNS := cronJob("gone-with-ns", "@hourly", "true")
		inNS.Namespace = "cron-ns"
		createCronJob(t, c, inNS)
		if err := c.CoreV1().Namespaces().Delete(ctx, "cron-ns", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 60*time.Second, "the namespace and its CronJob gone", func() (bool, error) {
			_, err := c.CoreV1().Namespaces().Get(ctx, "cron-ns", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})

	t.Run("history limits", func(t *testing.T) {
		// Suspended: only the Jobs made by hand finish, and the oldest
		// beyond the limits go (the trimming comes before the suspension).
		hist := cronJob("hist", "* * * * *", "true")
		hist.Spec.Suspend = ptr(true)
		hist.Spec.SuccessfulJobsHistoryLimit = ptr(int32(1))
		hist.Spec.FailedJobsHistoryLimit = ptr(int32(1))
		hist = createCronJob(t, c, hist)
		for _, name := range []string{"hist-ok-1", "hist-ok-2", "hist-ok-3"} {
			s.kubectl(t, "create", "job", name, "--from=cronjob/hist")
			waitFor(t, 90*time.Second, name+" complete or gone", func() (bool, error) {
				j, err := c.BatchV1().Jobs("default").Get(ctx, name, metav1.GetOptions{})
				return apierrors.IsNotFound(err) || err == nil && j.Status.CompletionTime != nil, nil
			})
		}
		waitFor(t, 30*time.Second, "one successful Job kept", func() (bool, error) {
			names := jobNames(cronJobsJobs(t, c, hist.UID))
			return slices.Equal(names, []string{"hist-ok-3"}), nil
		})
		for _, name := range []string{"hist-ok-1", "hist-ok-2"} {
			waitCronJobEvent(t, c, "hist", "SuccessfulDelete: Deleted job "+name)
		}
		if cj := getCronJob(t, c, "hist"); cj.Status.LastSuccessfulTime == nil || len(cj.Status.Active) != 0 {
			t.Errorf("status %+v", cj.Status)
		}
		if evs := cronJobEvents(t, c, "hist"); !slices.Contains(evs, "UnexpectedJob: Saw a job that the controller did not create or forgot: hist-ok-1") {
			t.Errorf("events %q", evs)
		}
	})

	t.Run("deletion", func(t *testing.T) {
		// Background (the default): the CronJob's Jobs go with it.
		if err := cjs.Delete(ctx, "tick", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "the Job of a deleted CronJob gone", func() (bool, error) {
			_, err := c.BatchV1().Jobs("default").Get(ctx, "by-hand", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		// Orphan: the Job stays, without its owner.
		s.kubectl(t, "create", "job", "kept", "--from=cronjob/hist")
		orphan := metav1.DeletePropagationOrphan
		if err := cjs.Delete(ctx, "hist", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
			t.Fatal(err)
		}
		kept, err := c.BatchV1().Jobs("default").Get(ctx, "kept", metav1.GetOptions{})
		if err != nil || len(kept.OwnerReferences) != 0 {
			t.Fatalf("orphaned job: %v %+v", err, kept)
		}
		// Foreground: the Jobs go first, then the CronJob.
		zoned := getCronJob(t, c, "zoned")
		s.kubectl(t, "create", "job", "zoned-1", "--from=cronjob/zoned")
		fg := metav1.DeletePropagationForeground
		if err := cjs.Delete(ctx, "zoned", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, "a CronJob deleted in the foreground gone", func() (bool, error) {
			_, err := cjs.Get(ctx, "zoned", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if left := cronJobsJobs(t, c, zoned.UID); len(left) != 0 {
			t.Errorf("jobs left: %v", jobNames(left))
		}
	})
}

// waitJobsOf waits until the CronJob's Jobs are exactly the names given.
func waitJobsOf(t testing.TB, c kubernetes.Interface, cj *batchv1.CronJob, timeout time.Duration, want ...string) {
	t.Helper()
	var got []string
	waitFor(t, timeout, fmt.Sprintf("cronjob %s's jobs %v (have %v)", cj.Name, want, &got), func() (bool, error) {
		got = jobNames(cronJobsJobs(t, c, cj.UID))
		return slices.Equal(got, want), nil
	})
}

// nextMinute is the first whole minute after t.
func nextMinute(t time.Time) time.Time { return t.Truncate(time.Minute).Add(time.Minute) }

// TestCronJobSchedules runs `* * * * *` CronJobs on real minutes, all in
// one skiffd so that one wait of two minute boundaries serves them all:
// Allow (kubectl create cronjob; a Job within 75 s, its name, annotation,
// owner, events and the CronJob's status), Forbid with a Job still
// running, Replace, and a suspended CronJob resumed.
func TestCronJobSchedules(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client

	s.kubectl(t, "create", "cronjob", "tick", "--image=busybox:1.35", "--schedule=* * * * *", "--", "date")
	tick := getCronJob(t, c, "tick")
	forbid := cronJob("forbid", "* * * * *", "sleep 600")
	forbid.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
	forbid = createCronJob(t, c, forbid)
	replace := cronJob("replace", "* * * * *", "sleep 600")
	replace.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
	replace = createCronJob(t, c, replace)
	paused := cronJob("paused", "* * * * *", "true")
	paused.Spec.Suspend = ptr(true)
	paused = createCronJob(t, c, paused)
	t.Cleanup(func() {
		for _, name := range []string{"tick", "forbid", "replace", "paused"} {
			_ = c.BatchV1().CronJobs("default").Delete(ctx, name, metav1.DeleteOptions{})
		}
	})
	created := tick.CreationTimestamp.Time
	if created.Second() > 55 {
		// NOTE: the others were created a moment later, possibly in the
		// next minute: start counting from theirs.
		created = paused.CreationTimestamp.Time
	}
	b1 := nextMinute(created)
	b2 := b1.Add(time.Minute)

	// First boundary: one Job each, named for it, but none while suspended.
	first := jobNameAt("tick", b1)
	waitJobsOf(t, c, tick, 75*time.Second, first)
	job := waitJob(t, c, "default", first, batchv1.JobComplete, 90*time.Second)
	if got := job.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != b1.UTC().Format(time.RFC3339) {
		t.Errorf("scheduled timestamp %q, want %s", got, b1.UTC().Format(time.RFC3339))
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "CronJob" || ref.Name != "tick" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("ownerReferences %+v", job.OwnerReferences)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 6 || job.Spec.Selector == nil {
		t.Errorf("the Job is not defaulted as a created Job: %+v", job.Spec)
	}
	waitCronJobEvent(t, c, "tick", "SuccessfulCreate: Created job "+first)
	waitCronJobEvent(t, c, "tick", "SawCompletedJob: Saw completed job: "+first+", condition: Complete")
	waitFor(t, 30*time.Second, "tick's status after its Job", func() (bool, error) {
		st := getCronJob(t, c, "tick").Status
		return len(st.Active) == 0 && st.LastScheduleTime != nil && st.LastScheduleTime.Time.Equal(b1) &&
			st.LastSuccessfulTime != nil && st.LastSuccessfulTime.Equal(job.Status.CompletionTime), nil
	})
	waitJobsOf(t, c, forbid, 30*time.Second, jobNameAt("forbid", b1))
	waitJobsOf(t, c, replace, 30*time.Second, jobNameAt("replace", b1))
	if st := getCronJob(t, c, "forbid").Status; len(st.Active) != 1 || st.Active[0].Name != jobNameAt("forbid", b1) {
		t.Errorf("forbid's active %+v", st.Active)
	}
	out := s.kubectl(t, "get", "cronjob", "forbid", "--no-headers")
	if f := strings.Fields(out); len(f) != 11 || f[8] != "1" || f[9] == "<none>" {
		t.Errorf("kubectl get cronjob forbid: %q", out)
	}

	// Second boundary: Forbid starts nothing while its Job runs, Replace
	// deletes its Job and starts the next.
	waitJobsOf(t, c, replace, time.Until(b2)+30*time.Second, jobNameAt("replace", b2))
	waitCronJobEvent(t, c, "replace", "SuccessfulDelete: Deleted job "+jobNameAt("replace", b1))
	waitCronJobEvent(t, c, "replace", "SuccessfulCreate: Created job "+jobNameAt("replace", b2))
	waitCronJobEvent(t, c, "forbid", "JobAlreadyActive: Not starting job because prior execution is running and concurrency policy is Forbid")
	waitJobsOf(t, c, tick, 30*time.Second, first, jobNameAt("tick", b2))
	if names := jobNames(cronJobsJobs(t, c, forbid.UID)); !slices.Equal(names, []string{jobNameAt("forbid", b1)}) {
		t.Errorf("forbid's jobs %v", names)
	}
	if st := getCronJob(t, c, "replace").Status; len(st.Active) != 1 || st.Active[0].Name != jobNameAt("replace", b2) {
		t.Errorf("replace's active %+v", st.Active)
	}

	// The suspended CronJob started nothing; resumed, it starts its most
	// recent missed time at once (no startingDeadlineSeconds), only that one.
	if names := jobNames(cronJobsJobs(t, c, paused.UID)); len(names) != 0 {
		t.Errorf("a suspended CronJob started %v", names)
	}
	resumedAt := time.Now()
	if _, err := c.BatchV1().CronJobs("default").Patch(ctx, "paused", types.MergePatchType, []byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	missed := resumedAt.Truncate(time.Minute)
	waitFor(t, 20*time.Second, "the resumed CronJob's Job", func() (bool, error) {
		names := jobNames(cronJobsJobs(t, c, paused.UID))
		if len(names) > 1 {
			return false, fmt.Errorf("a burst of Jobs: %v", names)
		}
		// NOTE: a minute may turn between the patch and the sync.
		return len(names) == 1 && (names[0] == jobNameAt("paused", missed) || names[0] == jobNameAt("paused", missed.Add(time.Minute))), nil
	})
}

// TestCronJobRestart stops skiffd (kill -9) across a due minute: on its
// return the CronJob within its startingDeadlineSeconds starts that minute's
// Job once; the one past its deadline starts none (kube looks for start
// times only within the deadline, so it does not even count it missed).
func TestCronJobRestart(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	c := s.client
	ontime := cronJob("ontime", "* * * * *", "true")
	ontime.Spec.StartingDeadlineSeconds = ptr(int64(300))
	ontime = createCronJob(t, c, ontime)
	late := cronJob("late", "* * * * *", "true")
	late.Spec.StartingDeadlineSeconds = ptr(int64(5))
	late = createCronJob(t, c, late)
	t.Cleanup(func() {
		for _, name := range []string{"ontime", "late"} {
			_ = c.BatchV1().CronJobs("default").Delete(ctx, name, metav1.DeleteOptions{})
		}
	})
	b1 := nextMinute(late.CreationTimestamp.Time)
	first := jobNameAt("ontime", b1)
	waitJobsOf(t, c, ontime, 75*time.Second, first)
	waitJobsOf(t, c, late, 30*time.Second, jobNameAt("late", b1))
	s.kill()

	// Down across the next minute, and past late's 5 s deadline.
	b2 := b1.Add(time.Minute)
	time.Sleep(time.Until(b2.Add(8 * time.Second)))
	s.start()
	waitJobsOf(t, c, ontime, 30*time.Second, first, jobNameAt("ontime", b2))
	if names := jobNames(cronJobsJobs(t, c, late.UID)); !slices.Equal(names, []string{jobNameAt("late", b1)}) {
		t.Errorf("late's jobs %v", names)
	}
	if st := getCronJob(t, c, "ontime").Status; st.LastScheduleTime == nil || !st.LastScheduleTime.Time.Equal(b2) {
		t.Errorf("ontime's lastScheduleTime %v, want %v", st.LastScheduleTime, b2)
	}
	if st := getCronJob(t, c, "late").Status; st.LastScheduleTime == nil || !st.LastScheduleTime.Time.Equal(b1) {
		t.Errorf("late's lastScheduleTime %v, want %v", st.LastScheduleTime, b1)
	}
}

// TestCronJobFailpoints kills skiffd inside the transaction of the sync that
// creates a scheduled Job, and right after it commits: back up, the minute's
// Job exists once, in the CronJob's active list.
func TestCronJobFailpoints(t *testing.T) {
	t.Parallel()
	for _, point := range []string{failpoint.InCronJobSync, failpoint.AfterCronJobSync} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			s := newSkiffd(t)
			s.useFailpoint(point)
			s.start()
			c := s.client
			cj := createCronJob(t, c, cronJob("fp", "* * * * *", "true"))
			t.Cleanup(func() { _ = c.BatchV1().CronJobs("default").Delete(context.Background(), "fp", metav1.DeleteOptions{}) })
			b1 := nextMinute(cj.CreationTimestamp.Time)
			s.waitKilledAt(point, time.Until(b1)+30*time.Second)
			s.start()
			waitFor(t, 30*time.Second, "the minute's Job once, active", func() (bool, error) {
				names := jobNames(cronJobsJobs(t, c, cj.UID))
				if len(names) > 1 {
					return false, fmt.Errorf("jobs %v", names)
				}
				st := getCronJob(t, c, "fp").Status
				return slices.Equal(names, []string{jobNameAt("fp", b1)}) && len(st.Active) == 1 && st.Active[0].Name == names[0] &&
					st.LastScheduleTime != nil && st.LastScheduleTime.Time.Equal(b1), nil
			})
		})
	}
}
