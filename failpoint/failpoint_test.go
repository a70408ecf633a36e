//go:build failpoints

package failpoint

import "testing"

func TestParse(t *testing.T) {
	tests := map[string]struct {
		in    string
		point string
		n     int64
	}{
		"point only":  {"after-task-start", "after-task-start", 1},
		"nth hit":     {"after-task-start:3", "after-task-start", 3},
		"bad count":   {"after-task-start:x", "after-task-start", 1},
		"zero count":  {"after-task-start:0", "after-task-start", 1},
		"nothing set": {"", "", 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			point, n := parse(tc.in)
			if point != tc.point || n != tc.n {
				t.Errorf("parse(%q) = %q, %d; want %q, %d", tc.in, point, n, tc.point, tc.n)
			}
		})
	}
}
