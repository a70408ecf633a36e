package podworker

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestTimingOf(t *testing.T) {
	got := timingOf(&corev1.Probe{})
	want := probeTiming{period: 10 * time.Second, timeout: time.Second, successThreshold: 1, failureThreshold: 3}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(probeTiming{})); diff != "" {
		t.Errorf("defaults (-want,+got):\n%s", diff)
	}
	got = timingOf(&corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, TimeoutSeconds: 3, SuccessThreshold: 2, FailureThreshold: 1})
	want = probeTiming{initialDelay: 5 * time.Second, period: 2 * time.Second, timeout: 3 * time.Second, successThreshold: 2, failureThreshold: 1}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(probeTiming{})); diff != "" {
		t.Errorf("set (-want,+got):\n%s", diff)
	}
}

// step is one probe: its raw result, and the verdict and change expected.
type step struct {
	result  probeResult
	verdict probeResult
	changed bool
}

func TestProbeState(t *testing.T) {
	const S, F = resultSuccess, resultFailure
	tests := map[string]struct {
		kind   probeKind
		timing probeTiming
		steps  []step
		onHold bool
	}{
		"readiness starts unready, one success makes it ready": {
			kind: readinessProbe, timing: probeTiming{successThreshold: 1, failureThreshold: 3},
			steps: []step{{S, S, true}, {S, S, false}, {F, S, false}, {F, S, false}, {F, F, true}, {S, S, true}},
		},
		"readiness needs successThreshold in a row": {
			kind: readinessProbe, timing: probeTiming{successThreshold: 2, failureThreshold: 1},
			steps: []step{{S, F, false}, {F, F, false}, {S, F, false}, {S, S, true}, {F, F, true}},
		},
		"liveness fails after failureThreshold and holds": {
			kind: livenessProbe, timing: probeTiming{successThreshold: 1, failureThreshold: 2},
			steps:  []step{{F, S, false}, {S, S, false}, {F, S, false}, {F, F, true}},
			onHold: true,
		},
		"startup passes once": {
			kind: startupProbe, timing: probeTiming{successThreshold: 1, failureThreshold: 3},
			steps: []step{{F, resultUnknown, false}, {S, S, true}},
		},
		"startup fails after failureThreshold": {
			kind: startupProbe, timing: probeTiming{successThreshold: 1, failureThreshold: 2},
			steps:  []step{{F, resultUnknown, false}, {F, F, true}},
			onHold: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newProbeState(tc.kind, tc.timing)
			for i, st := range tc.steps {
				verdict, changed := s.observe(st.result)
				if verdict != st.verdict || changed != st.changed {
					t.Errorf("step %d: got (%v, %v), want (%v, %v)", i, verdict, changed, st.verdict, st.changed)
				}
			}
			if s.onHold != tc.onHold {
				t.Errorf("onHold = %v, want %v", s.onHold, tc.onHold)
			}
		})
	}
}

func TestProbeSchedule(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	timing := probeTiming{initialDelay: 5 * time.Second, period: 2 * time.Second, successThreshold: 1, failureThreshold: 1}
	tests := map[string]struct {
		kind    probeKind
		now     time.Duration
		started bool
		hold    bool
		want    bool
	}{
		"before the initial delay":         {kind: readinessProbe, now: 4 * time.Second, started: true},
		"after the initial delay":          {kind: readinessProbe, now: 5 * time.Second, started: true, want: true},
		"liveness waits for the start":     {kind: livenessProbe, now: 6 * time.Second},
		"startup runs until started":       {kind: startupProbe, now: 6 * time.Second, want: true},
		"startup stops once started":       {kind: startupProbe, now: 6 * time.Second, started: true},
		"on hold after a liveness failure": {kind: livenessProbe, now: 6 * time.Second, started: true, hold: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newProbeState(tc.kind, timing)
			s.onHold = tc.hold
			if got := s.shouldProbe(at(tc.now), start, tc.started); got != tc.want {
				t.Errorf("shouldProbe = %v, want %v", got, tc.want)
			}
		})
	}
	s := newProbeState(readinessProbe, timing)
	for _, tc := range []struct{ last, want time.Duration }{{0, 5 * time.Second}, {4 * time.Second, 5 * time.Second}, {5 * time.Second, 7 * time.Second}, {7 * time.Second, 9 * time.Second}} {
		if got := s.nextProbeAt(at(tc.last), start); !got.Equal(at(tc.want)) {
			t.Errorf("nextProbeAt(%s) = %s, want %s", tc.last, got.Sub(start), tc.want)
		}
	}
}
