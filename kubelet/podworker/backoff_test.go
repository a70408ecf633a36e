package podworker

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	base, max := 10*time.Second, 5*time.Minute
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for n, w := range want {
		if got := backoffDelay(base, max, n); got != w {
			t.Errorf("backoffDelay(n=%d) = %s, want %s", n, got, w)
		}
	}
}

func TestRestartBackoff(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		exits []time.Duration // exit times after t0
		want  []time.Duration // delay before each restart
	}{
		"crash loop": {
			exits: []time.Duration{0, time.Second, 12 * time.Second, 33 * time.Second, 74 * time.Second, 155 * time.Second, 316 * time.Second, 617 * time.Second},
			want:  []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute},
		},
		"ran over ten minutes: starts over": {
			exits: []time.Duration{0, time.Second, 12 * time.Second, 12*time.Second + 10*time.Minute + time.Millisecond, 13*time.Second + 10*time.Minute},
			want:  []time.Duration{0, 10 * time.Second, 20 * time.Second, 0, 10 * time.Second},
		},
		"exactly ten minutes does not reset": {
			exits: []time.Duration{0, 10 * time.Minute},
			want:  []time.Duration{0, 10 * time.Second},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := restartBackoff{base: 10 * time.Second, max: 5 * time.Minute}
			for i, at := range tc.exits {
				if got := b.next(t0.Add(at)); got != tc.want[i] {
					t.Errorf("exit %d: delay %s, want %s", i, got, tc.want[i])
				}
			}
		})
	}
}
