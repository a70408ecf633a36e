package podworker

import "time"

// backoffDelay is base doubled n times, capped at max: the kubelet's
// restart and image-pull back-off (10s doubling to 5m by default).
func backoffDelay(base, max time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}
