package runtime

import (
	"testing"
	"time"

	"github.com/containerd/containerd/images"
	"github.com/google/go-cmp/cmp"
)

func TestImagesToRemove(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	old := imageUsage{Names: []string{"old"}, LastUsed: day(1), Size: 100}
	oldInUse := imageUsage{Names: []string{"old-in-use"}, LastUsed: day(2), Size: 500, InUse: true}
	middle := imageUsage{Names: []string{"middle", "middle-alias"}, LastUsed: day(3), Size: 200}
	recent := imageUsage{Names: []string{"recent"}, LastUsed: day(4), Size: 300}
	all := []imageUsage{recent, oldInUse, middle, old}
	names := func(imgs []imageUsage) [][]string {
		var out [][]string
		for _, img := range imgs {
			out = append(out, img.Names)
		}
		return out
	}
	tests := map[string]struct {
		toFree int64
		want   [][]string
	}{
		"nothing to free":         {toFree: 0},
		"oldest first":            {toFree: 50, want: [][]string{{"old"}}},
		"exactly the oldest":      {toFree: 100, want: [][]string{{"old"}}},
		"in-use images skipped":   {toFree: 101, want: [][]string{{"old"}, {"middle", "middle-alias"}}},
		"everything unused":       {toFree: 10000, want: [][]string{{"old"}, {"middle", "middle-alias"}, {"recent"}}},
		"negative: over the goal": {toFree: -5},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(imagesToRemove(all, tc.toFree))); diff != "" {
				t.Errorf("removed (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestLastUsed(t *testing.T) {
	updated := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	used := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		labels map[string]string
		want   time.Time
	}{
		"never used: last update": {want: updated},
		"used":                    {labels: map[string]string{labelLastUsed: used.Format(time.RFC3339Nano)}, want: used},
		"garbled label":           {labels: map[string]string{labelLastUsed: "yesterday"}, want: updated},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			img := imageRecord(tc.labels, updated)
			if got := lastUsed(img); !got.Equal(tc.want) {
				t.Errorf("lastUsed = %v, want %v", got, tc.want)
			}
		})
	}
}

func imageRecord(labels map[string]string, updated time.Time) images.Image {
	return images.Image{Name: "x", Labels: labels, UpdatedAt: updated}
}
