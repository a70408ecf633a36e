package runtime

import (
	"fmt"
	"testing"
	"time"
)

func TestImageCacheTouch(t *testing.T) {
	c := newImageCache()
	at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		name string
		now  time.Time
		want bool
	}{
		{"a", at, true},
		{"a", at.Add(30 * time.Second), false},
		{"b", at.Add(30 * time.Second), true},
		{"a", at.Add(touchEvery), true},
		{"a", at.Add(touchEvery + time.Second), false},
		{"a", at, true}, // the clock went back: record again
	}
	for i, s := range steps {
		if got := c.dueTouch(s.name, s.now); got != s.want {
			t.Errorf("step %d: dueTouch(%s, %v) = %v, want %v", i, s.name, s.now, got, s.want)
		}
	}
}

func TestImageCacheUnpacked(t *testing.T) {
	c := newImageCache()
	if c.seenUnpacked("sha256:a") {
		t.Fatal("unpacked before it was seen")
	}
	c.setUnpacked("sha256:a", true)
	if !c.seenUnpacked("sha256:a") {
		t.Fatal("not remembered unpacked")
	}
	c.setUnpacked("sha256:a", false)
	if c.seenUnpacked("sha256:a") {
		t.Fatal("still unpacked after its layers went")
	}
	for i := range maxImageFacts + 1 {
		c.setUnpacked(fmt.Sprint(i), true)
	}
	if n := len(c.unpacked); n > maxImageFacts {
		t.Errorf("%d chains remembered, more than %d", n, maxImageFacts)
	}
}
