package cronjobcontroller

import (
	"errors"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
)

// nextScheduleDelta pads each wake-up past the scheduled time, so that a
// timer that fires a little early (clock skew, NTP slew) still finds the
// time due (kube's nextScheduleDelta).
const nextScheduleDelta = 100 * time.Millisecond

// tooManyMissed is how many missed start times make the controller warn and
// start only the most recent (kube's arbitrary "more than 80, less than lots").
const tooManyMissed = 100

// missed says how many start times have passed unstarted.
type missed int

const (
	noneMissed missed = iota
	fewMissed
	manyMissed
)

// errInvalidSchedule is a schedule that parses but never fires twice a
// second apart ("59 23 31 2 *": February has no 31st).
var errInvalidSchedule = errors.New("time difference between two schedules is less than 1 second")

// mostRecentScheduleTime returns the time from which start times count
// (lastScheduleTime, else the CronJob's creation; with withDeadline, no
// earlier than startingDeadlineSeconds ago), the most recent start time not
// after now (nil if none), and how many start times were missed.
//
// NOTE: kube's mostRecentScheduleTime: the count of missed times is an
// estimate from the interval between the first two, and only the most
// recent is computed exactly, so that a clock off by years costs nothing.
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule, withDeadline bool) (time.Time, *time.Time, missed, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if withDeadline && cj.Spec.StartingDeadlineSeconds != nil {
		if deadline := now.Add(-time.Duration(*cj.Spec.StartingDeadlineSeconds) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	t1 := sched.Next(earliest)
	t2 := sched.Next(t1)
	switch {
	case now.Before(t1):
		return earliest, nil, noneMissed, nil
	case now.Before(t2):
		return earliest, &t1, noneMissed, nil
	}
	interval := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if interval < 1 {
		return earliest, nil, noneMissed, errInvalidSchedule
	}
	count := int64(now.Sub(t1).Seconds())/interval + 1
	// Start one interval before the estimate, and let the schedule find
	// the exact times from there (irregular schedules, @every).
	var recent time.Time
	for t := sched.Next(t1.Add(time.Duration((count-2)*interval) * time.Second)); !t.After(now); t = sched.Next(t) {
		recent = t
	}
	m := fewMissed
	if count > tooManyMissed {
		m = manyMissed
	}
	if recent.IsZero() {
		return earliest, nil, m, nil
	}
	return earliest, &recent, m, nil
}

// nextScheduleDuration is how long until the CronJob's next start time
// after the last one it scheduled (or after now, when times were missed),
// padded by nextScheduleDelta: when to sync it again.
func nextScheduleDuration(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) time.Duration {
	earliest, recent, m, err := mostRecentScheduleTime(cj, now, sched, false)
	from := now
	if err == nil && recent != nil {
		from = *recent
	} else if err == nil && m == noneMissed {
		from = earliest
	}
	return sched.Next(from).Add(nextScheduleDelta).Sub(now)
}
