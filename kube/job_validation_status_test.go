package kube

import "testing"

func TestValidIndexSet(t *testing.T) {
	tests := map[string]struct {
		set  string
		want string // "" = valid
	}{
		"empty":              {"", ""},
		"single and ranges":  {"0,2-4,6", ""},
		"not a number":       {"zz", `cannot convert string to integer for index: "zz"`},
		"bad upper bound":    {"1-x", `cannot convert string to integer for index: "x"`},
		"negative":           {"-1", `cannot convert string to integer for index: ""`},
		"three parts":        {"1-2-3", `the fragment "1-2-3" violates the requirement that an index interval can have at most two parts separated by '-'`},
		"beyond completions": {"3-10", `too large index: "10"`},
		"reversed range":     {"4-2", "non-increasing order, previous: 4, current: 2"},
		"single-index range": {"2-2", "non-increasing order, previous: 2, current: 2"},
		"out of order":       {"5,3", "non-increasing order, previous: 5, current: 3"},
		"overlapping":        {"1-3,3", "non-increasing order, previous: 3, current: 3"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := validIndexSet(tc.set, 8)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("validIndexSet(%q) = %q, want %q", tc.set, got, tc.want)
			}
		})
	}
}

func TestIndexSetsOverlap(t *testing.T) {
	tests := map[string]struct {
		completed, failed string
		at                int32
		overlap           bool
	}{
		"disjoint":               {"0-2,6", "3-5,7", 0, false},
		"overlap inside a range": {"0-4", "3", 3, true},
		"first common index":     {"1,5-7", "0,6-7", 6, true},
		"unparsable skipped":     {"x,2", "2", 2, true},
		"one side empty":         {"", "1", 0, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			at, overlap := indexSetsOverlap(tc.completed, tc.failed, 8)
			if at != tc.at || overlap != tc.overlap {
				t.Errorf("indexSetsOverlap(%q, %q) = %d, %v; want %d, %v", tc.completed, tc.failed, at, overlap, tc.at, tc.overlap)
			}
		})
	}
}
