package cronjobcontroller

import (
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/skiff-sh/skiff/kube"
)

// at is a UTC time on the test's day.
func at(hhmmss string) time.Time {
	t, err := time.Parse(time.DateTime, "2026-11-25 "+hhmmss)
	if err != nil {
		panic(err)
	}
	return t
}

func ptrTime(t time.Time) *time.Time { return &t }

func scheduledCronJob(schedule string, created time.Time, last *time.Time) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "cj", Namespace: "ns", CreationTimestamp: metav1.NewTime(created)},
		Spec:       batchv1.CronJobSpec{Schedule: schedule},
	}
	if last != nil {
		cj.Status.LastScheduleTime = &metav1.Time{Time: *last}
	}
	return cj
}

func TestMostRecentScheduleTime(t *testing.T) {
	tests := map[string]struct {
		schedule string
		timeZone *string
		created  time.Time
		last     *time.Time
		deadline *int64
		now      time.Time
		want     *time.Time
		missed   missed
		err      error
	}{
		"not due yet": {schedule: "*/5 * * * *", created: at("10:01:00"), now: at("10:04:59")},
		"due": {schedule: "*/5 * * * *", created: at("10:01:00"), now: at("10:05:00"),
			want: ptrTime(at("10:05:00"))},
		"due, a little late": {schedule: "*/5 * * * *", created: at("10:01:00"), now: at("10:07:30"),
			want: ptrTime(at("10:05:00"))},
		"the last schedule counts, not creation": {schedule: "*/5 * * * *", created: at("09:00:00"), last: ptrTime(at("10:05:00")),
			now: at("10:07:00")},
		"after downtime: only the most recent": {schedule: "*/5 * * * *", created: at("09:00:00"), last: ptrTime(at("10:00:00")),
			now: at("10:31:00"), want: ptrTime(at("10:30:00")), missed: fewMissed},
		"the deadline hides older start times": {schedule: "*/5 * * * *", created: at("09:00:00"), last: ptrTime(at("10:00:00")),
			deadline: ptr.To(int64(120)), now: at("10:31:00"), want: ptrTime(at("10:30:00"))},
		"a deadline shorter than the delay": {schedule: "*/5 * * * *", created: at("09:00:00"), last: ptrTime(at("10:00:00")),
			deadline: ptr.To(int64(30)), now: at("10:31:00")},
		"more than 100 missed": {schedule: "* * * * *", created: at("00:00:00"), last: ptrTime(at("08:00:00")),
			now: at("10:00:30"), want: ptrTime(at("10:00:00")), missed: manyMissed},
		"clock years ahead": {schedule: "0 * * * *", created: at("00:00:00"), now: at("10:00:00").AddDate(30, 0, 0),
			want: ptrTime(at("10:00:00").AddDate(30, 0, 0)), missed: manyMissed},
		"clock set back before the last schedule": {schedule: "* * * * *", created: at("09:00:00"), last: ptrTime(at("10:00:00")),
			now: at("09:30:00")},
		"a macro": {schedule: "@hourly", created: at("09:10:00"), now: at("10:00:01"), want: ptrTime(at("10:00:00"))},
		"every":   {schedule: "@every 90s", created: at("10:00:00"), now: at("10:03:10"), want: ptrTime(at("10:03:00")), missed: fewMissed},
		"a time zone": {schedule: "0 9 * * *", timeZone: ptr.To("Asia/Kolkata"), created: at("00:00:00"), now: at("03:31:00"),
			want: ptrTime(at("03:30:00"))},
		"irregular": {schedule: "30 6-16/4 * * 1-5", created: at("00:00:00"), now: at("17:00:00"),
			want: ptrTime(at("14:30:00")), missed: fewMissed},
		"a date that never comes": {schedule: "59 23 31 2 *", created: at("00:00:00"), now: at("10:00:00").AddDate(2, 0, 0),
			err: errInvalidSchedule},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cj := scheduledCronJob(tc.schedule, tc.created, tc.last)
			cj.Spec.TimeZone = tc.timeZone
			cj.Spec.StartingDeadlineSeconds = tc.deadline
			sched, err := kube.CronJobSchedule(cj)
			if err != nil {
				t.Fatal(err)
			}
			_, got, m, err := mostRecentScheduleTime(cj, tc.now, sched, true)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if (got == nil) != (tc.want == nil) || got != nil && !got.Equal(*tc.want) {
				t.Errorf("most recent %v, want %v", got, tc.want)
			}
			if m != tc.missed {
				t.Errorf("missed %v, want %v", m, tc.missed)
			}
		})
	}
}

func TestNextScheduleDuration(t *testing.T) {
	tests := map[string]struct {
		schedule string
		created  time.Time
		last     *time.Time
		now      time.Time
		want     time.Duration
	}{
		"from creation":      {"*/5 * * * *", at("10:01:00"), nil, at("10:02:00"), 3*time.Minute + nextScheduleDelta},
		"from the last":      {"*/5 * * * *", at("09:00:00"), ptrTime(at("10:05:00")), at("10:05:00"), 5*time.Minute + nextScheduleDelta},
		"a due time pending": {"*/5 * * * *", at("09:00:00"), ptrTime(at("10:00:00")), at("10:06:00"), 4*time.Minute + nextScheduleDelta},
		"after downtime":     {"*/5 * * * *", at("09:00:00"), ptrTime(at("10:00:00")), at("10:31:00"), 4*time.Minute + nextScheduleDelta},
		"clock set back":     {"* * * * *", at("09:00:00"), ptrTime(at("10:00:00")), at("09:30:00"), 31*time.Minute + nextScheduleDelta},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cj := scheduledCronJob(tc.schedule, tc.created, tc.last)
			sched, err := kube.CronJobSchedule(cj)
			if err != nil {
				t.Fatal(err)
			}
			if got := nextScheduleDuration(cj, tc.now, sched); got != tc.want {
				t.Errorf("next in %v, want %v", got, tc.want)
			}
		})
	}
}
