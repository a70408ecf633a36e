package jobcontroller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestIntervals(t *testing.T) {
	cases := map[string]struct {
		start       string
		completions int
		add         []int
		want        string
		wantTotal   int
	}{
		"empty":                        {start: "", completions: 5, want: "", wantTotal: 0},
		"single":                       {start: "", completions: 5, add: []int{3}, want: "3", wantTotal: 1},
		"pair is written with a comma": {start: "1", completions: 5, add: []int{2}, want: "1,2", wantTotal: 2},
		"run is written with a dash":   {start: "0,1", completions: 5, add: []int{2, 3}, want: "0-3", wantTotal: 4},
		"gaps stay":                    {start: "0", completions: 5, add: []int{4, 2, 3}, want: "0,2-4", wantTotal: 4},
		"merges across intervals":      {start: "0-1,3-4", completions: 9, add: []int{2}, want: "0-4", wantTotal: 5},
		"beyond completions dropped":   {start: "0-2,5-9", completions: 7, want: "0-2,5,6", wantTotal: 5},
		"corrupted entries ignored":    {start: "x,1,3-a,4", completions: 7, want: "1,4", wantTotal: 2},
		"duplicates once":              {start: "1-3", completions: 7, add: []int{2, 2}, want: "1-3", wantTotal: 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := parseIntervals(tc.start, tc.completions).withIndexes(tc.add)
			if got.String() != tc.want {
				t.Errorf("String = %q, want %q", got.String(), tc.want)
			}
			if got.total() != tc.wantTotal {
				t.Errorf("total = %d, want %d", got.total(), tc.wantTotal)
			}
		})
	}
}

func TestIntervalsHasAndOverlap(t *testing.T) {
	iv := parseIntervals("1-3,7,9-10", 20)
	var has []int
	for ix := 0; ix < 12; ix++ {
		if iv.has(ix) {
			has = append(has, ix)
		}
	}
	if diff := cmp.Diff([]int{1, 2, 3, 7, 9, 10}, has, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("has (-want +got):\n%s", diff)
	}
	cases := map[string]struct {
		other string
		want  int
	}{
		"disjoint":  {"4-6", 0},
		"inside":    {"2", 1},
		"spanning":  {"0-20", 6},
		"partially": {"3-9", 3},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := iv.overlap(parseIntervals(tc.other, 20)); got != tc.want {
				t.Errorf("overlap = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestIntervalsMissing(t *testing.T) {
	cases := map[string]struct {
		set      string
		limit, n int
		want     []int
	}{
		"empty set":                   {set: "", limit: 5, n: 3, want: []int{0, 1, 2}},
		"gaps between intervals":      {set: "0,2-3,6", limit: 9, n: 3, want: []int{1, 4, 5}},
		"after the last interval":     {set: "0-3", limit: 9, n: 2, want: []int{4, 5}},
		"never at or beyond limit":    {set: "1", limit: 3, n: 5, want: []int{0, 2}},
		"all taken":                   {set: "0-4", limit: 5, n: 2, want: nil},
		"interval beyond limit":       {set: "0,3-9", limit: 5, n: 5, want: []int{1, 2}},
		"n zero":                      {set: "1", limit: 5, n: 0, want: nil},
		"stops once n are found":      {set: "5-6", limit: 9, n: 2, want: []int{0, 1}},
		"run up to the limit exactly": {set: "0-2", limit: 3, n: 1, want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := parseIntervals(tc.set, 100).missing(tc.limit, tc.n)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("missing(%d, %d) of %q (-want +got):\n%s", tc.limit, tc.n, tc.set, diff)
			}
		})
	}
}
