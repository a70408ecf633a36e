package podworker

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// probeKind is one of a container's three probes.
type probeKind int

const (
	startupProbe probeKind = iota
	livenessProbe
	readinessProbe
)

func (k probeKind) String() string {
	return [...]string{"Startup", "Liveness", "Readiness"}[k]
}

// probeResult is a probe's published verdict.
type probeResult int

const (
	resultUnknown probeResult = iota
	resultSuccess
	resultFailure
)

// probeTiming is a probe's timing with the API's defaults applied.
type probeTiming struct {
	initialDelay, period, timeout time.Duration
	successThreshold              int
	failureThreshold              int
}

// timingOf applies the API server's probe defaults (period 10s, timeout 1s,
// success 1, failure 3) to p.
func timingOf(p *corev1.Probe) probeTiming {
	t := probeTiming{
		initialDelay:     time.Duration(p.InitialDelaySeconds) * time.Second,
		period:           10 * time.Second,
		timeout:          time.Second,
		successThreshold: 1,
		failureThreshold: 3,
	}
	if p.PeriodSeconds > 0 {
		t.period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.TimeoutSeconds > 0 {
		t.timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if p.SuccessThreshold > 0 {
		t.successThreshold = int(p.SuccessThreshold)
	}
	if p.FailureThreshold > 0 {
		t.failureThreshold = int(p.FailureThreshold)
	}
	return t
}

// probeState is the kubelet's prober worker for one probe of one container
// instance, without its goroutine: consecutive results are counted, and
// the published verdict only changes once a threshold is reached. A
// liveness or startup failure puts the probe on hold (the container is
// being killed).
type probeState struct {
	kind   probeKind
	timing probeTiming

	last      probeResult // the last raw result
	run       int         // how many times in a row it came
	published probeResult
	onHold    bool
}

func newProbeState(kind probeKind, timing probeTiming) *probeState {
	s := &probeState{kind: kind, timing: timing}
	// NOTE: as in the kubelet, a readiness probe starts as failed (not
	// ready), a liveness probe as passed, a startup probe as unknown.
	switch kind {
	case readinessProbe:
		s.published = resultFailure
	case livenessProbe:
		s.published = resultSuccess
	}
	return s
}

// shouldProbe reports whether the probe runs now, for a container that
// started at startedAt and has (started) or has not passed its startup
// probe: not before initialDelaySeconds, startup probes only until the
// container started, the others only after; none while on hold.
func (s *probeState) shouldProbe(now, startedAt time.Time, started bool) bool {
	switch {
	case s.onHold:
		return false
	case now.Sub(startedAt) < s.timing.initialDelay:
		return false
	case s.kind == startupProbe:
		return !started
	default:
		return started
	}
}

// observe records one probe result; it returns the published verdict and
// whether it changed.
func (s *probeState) observe(result probeResult) (probeResult, bool) {
	if result == s.last {
		s.run++
	} else {
		s.last, s.run = result, 1
	}
	if (result == resultFailure && s.run < s.timing.failureThreshold) ||
		(result == resultSuccess && s.run < s.timing.successThreshold) {
		return s.published, false
	}
	changed := s.published != result
	s.published = result
	if result == resultFailure && s.kind != readinessProbe {
		s.onHold, s.run = true, 0
	}
	return result, changed || s.onHold
}

// nextProbeAt is when the probe runs after one at last (or a skipped
// turn): every period, the first one initialDelaySeconds after the start.
func (s *probeState) nextProbeAt(last, startedAt time.Time) time.Time {
	if first := startedAt.Add(s.timing.initialDelay); last.Before(first) {
		return first
	}
	return last.Add(s.timing.period)
}
