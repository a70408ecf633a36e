package podworker

import "time"

// backoffDelay is base doubled n times, capped at max: the kubelet's
// image-pull and sync-error back-off (10s doubling to 5m by default).
func backoffDelay(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// restartBackoff is the kubelet's per-container restart back-off
// (flowcontrol.Backoff keyed by pod and container): the first restart is
// immediate, the next waits base after the exit, then twice as long each
// time up to max. An exit more than twice max after the previous one (the
// container ran long enough, 10 minutes by default) starts over.
type restartBackoff struct {
	base, max time.Duration
	delay     time.Duration // the wait of the next restart; 0 = none recorded
	last      time.Time     // the exit that set delay
}

// next returns how long after exitedAt the container may restart, and
// records the restart.
func (b *restartBackoff) next(exitedAt time.Time) time.Duration {
	if b.delay == 0 || exitedAt.Sub(b.last) > 2*b.max {
		b.delay, b.last = b.base, exitedAt
		return 0
	}
	d := b.delay
	b.delay, b.last = min(2*b.delay, b.max), exitedAt
	return d
}
