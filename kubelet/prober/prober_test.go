package prober

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestTimingOf(t *testing.T) {
	got := TimingOf(&corev1.Probe{})
	want := Timing{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Timing{})); diff != "" {
		t.Errorf("defaults (-want,+got):\n%s", diff)
	}
	got = TimingOf(&corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, TimeoutSeconds: 3, SuccessThreshold: 2, FailureThreshold: 1})
	want = Timing{InitialDelay: 5 * time.Second, Period: 2 * time.Second, Timeout: 3 * time.Second, SuccessThreshold: 2, FailureThreshold: 1}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Timing{})); diff != "" {
		t.Errorf("set (-want,+got):\n%s", diff)
	}
}

// step is one probe: its raw result, and the verdict and change expected.
type step struct {
	result  Result
	verdict Result
	changed bool
}

func TestProbeState(t *testing.T) {
	const S, F = Success, Failure
	tests := map[string]struct {
		kind   Kind
		timing Timing
		steps  []step
		onHold bool
	}{
		"readiness starts unready, one success makes it ready": {
			kind: Readiness, timing: Timing{SuccessThreshold: 1, FailureThreshold: 3},
			steps: []step{{S, S, true}, {S, S, false}, {F, S, false}, {F, S, false}, {F, F, true}, {S, S, true}},
		},
		"readiness needs SuccessThreshold in a row": {
			kind: Readiness, timing: Timing{SuccessThreshold: 2, FailureThreshold: 1},
			steps: []step{{S, F, false}, {F, F, false}, {S, F, false}, {S, S, true}, {F, F, true}},
		},
		"liveness fails after FailureThreshold and holds": {
			kind: Liveness, timing: Timing{SuccessThreshold: 1, FailureThreshold: 2},
			steps:  []step{{F, S, false}, {S, S, false}, {F, S, false}, {F, F, true}},
			onHold: true,
		},
		"startup passes once": {
			kind: Startup, timing: Timing{SuccessThreshold: 1, FailureThreshold: 3},
			steps: []step{{F, Unknown, false}, {S, S, true}},
		},
		"startup fails after FailureThreshold": {
			kind: Startup, timing: Timing{SuccessThreshold: 1, FailureThreshold: 2},
			steps:  []step{{F, Unknown, false}, {F, F, true}},
			onHold: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := NewState(tc.kind, tc.timing)
			for i, st := range tc.steps {
				verdict, changed := s.Observe(st.result)
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
	timing := Timing{InitialDelay: 5 * time.Second, Period: 2 * time.Second, SuccessThreshold: 1, FailureThreshold: 1}
	tests := map[string]struct {
		kind    Kind
		now     time.Duration
		started bool
		hold    bool
		want    bool
	}{
		"before the initial delay":         {kind: Readiness, now: 4 * time.Second, started: true},
		"after the initial delay":          {kind: Readiness, now: 5 * time.Second, started: true, want: true},
		"liveness waits for the start":     {kind: Liveness, now: 6 * time.Second},
		"startup runs until started":       {kind: Startup, now: 6 * time.Second, want: true},
		"startup stops once started":       {kind: Startup, now: 6 * time.Second, started: true},
		"on hold after a liveness failure": {kind: Liveness, now: 6 * time.Second, started: true, hold: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := NewState(tc.kind, timing)
			s.onHold = tc.hold
			if got := s.ShouldProbe(at(tc.now), start, tc.started); got != tc.want {
				t.Errorf("shouldProbe = %v, want %v", got, tc.want)
			}
		})
	}
	s := NewState(Readiness, timing)
	for _, tc := range []struct{ last, want time.Duration }{{0, 5 * time.Second}, {4 * time.Second, 5 * time.Second}, {5 * time.Second, 7 * time.Second}, {7 * time.Second, 9 * time.Second}} {
		if got := s.NextProbeAt(at(tc.last), start); !got.Equal(at(tc.want)) {
			t.Errorf("NextProbeAt(%s) = %s, want %s", tc.last, got.Sub(start), tc.want)
		}
	}
}
