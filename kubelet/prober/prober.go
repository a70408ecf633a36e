// Package prober holds the kubelet's bookkeeping of a container's probes
// (startup, liveness, readiness), without goroutines, clocks or handlers:
// each probe's timing with the API's defaults (TimingOf), when it runs
// (ShouldProbe, NextProbeAt), and how consecutive results become the
// published verdict through the success and failure thresholds (Observe), as
// the kubelet's prober workers count them. The pod worker runs the probes
// and acts on the verdicts.
package prober

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kind is one of a container's three probes.
type Kind int

// The three kinds of probe.
const (
	Startup Kind = iota
	Liveness
	Readiness
)

// String is the kind as the kubelet's events name it ("Liveness").
func (k Kind) String() string {
	return [...]string{"Startup", "Liveness", "Readiness"}[k]
}

// Result is a probe's published verdict.
type Result int

// The verdicts of a probe.
const (
	Unknown Result = iota
	Success
	Failure
)

// Timing is a probe's timing with the API's defaults applied.
type Timing struct {
	InitialDelay, Period, Timeout time.Duration
	SuccessThreshold              int
	FailureThreshold              int
}

// TimingOf applies the API server's probe defaults (period 10s, timeout 1s,
// success 1, failure 3) to p.
func TimingOf(p *corev1.Probe) Timing {
	t := Timing{
		InitialDelay:     time.Duration(p.InitialDelaySeconds) * time.Second,
		Period:           10 * time.Second,
		Timeout:          time.Second,
		SuccessThreshold: 1,
		FailureThreshold: 3,
	}
	if p.PeriodSeconds > 0 {
		t.Period = time.Duration(p.PeriodSeconds) * time.Second
	}
	if p.TimeoutSeconds > 0 {
		t.Timeout = time.Duration(p.TimeoutSeconds) * time.Second
	}
	if p.SuccessThreshold > 0 {
		t.SuccessThreshold = int(p.SuccessThreshold)
	}
	if p.FailureThreshold > 0 {
		t.FailureThreshold = int(p.FailureThreshold)
	}
	return t
}

// State is the kubelet's prober worker for one probe of one container
// instance, without its goroutine: consecutive results are counted, and
// the published verdict only changes once a threshold is reached. A
// liveness or startup failure puts the probe on hold (the container is
// being killed).
type State struct {
	kind   Kind
	timing Timing

	last      Result // the last raw result
	run       int    // how many times in a row it came
	published Result
	onHold    bool
}

// NewState returns the state of a kind probe with timing that has not run.
func NewState(kind Kind, timing Timing) *State {
	s := &State{kind: kind, timing: timing}
	// NOTE: as in the kubelet, a readiness probe starts as failed (not
	// ready), a liveness probe as passed, a startup probe as unknown.
	switch kind {
	case Readiness:
		s.published = Failure
	case Liveness:
		s.published = Success
	}
	return s
}

// ShouldProbe reports whether the probe runs now, for a container that
// started at startedAt and has (started) or has not passed its startup
// probe: not before initialDelaySeconds, startup probes only until the
// container started, the others only after; none while on hold.
func (s *State) ShouldProbe(now, startedAt time.Time, started bool) bool {
	switch {
	case s.onHold:
		return false
	case now.Sub(startedAt) < s.timing.InitialDelay:
		return false
	case s.kind == Startup:
		return !started
	default:
		return started
	}
}

// Observe records one probe result; it returns the published verdict and
// whether it changed.
func (s *State) Observe(result Result) (Result, bool) {
	if result == s.last {
		s.run++
	} else {
		s.last, s.run = result, 1
	}
	if (result == Failure && s.run < s.timing.FailureThreshold) ||
		(result == Success && s.run < s.timing.SuccessThreshold) {
		return s.published, false
	}
	changed := s.published != result
	s.published = result
	if result == Failure && s.kind != Readiness {
		s.onHold, s.run = true, 0
	}
	return result, changed || s.onHold
}

// NextProbeAt is when the probe runs after one at last (or a skipped
// turn): every Period, the first one initialDelaySeconds after the start.
func (s *State) NextProbeAt(last, startedAt time.Time) time.Time {
	if first := startedAt.Add(s.timing.InitialDelay); last.Before(first) {
		return first
	}
	return last.Add(s.timing.Period)
}
