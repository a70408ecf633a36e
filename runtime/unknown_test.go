package runtime

import (
	"testing"
	"time"
)

// A task is timed from the first "unknown" answer; a known status, or its
// removal, starts the count again.
func TestUnknownTasks(t *testing.T) {
	var u unknownTasks
	t0 := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	if d := u.seen("a", t0); d != 0 {
		t.Errorf("first seen: %s, want 0", d)
	}
	if d := u.seen("a", t0.Add(40*time.Second)); d != 40*time.Second {
		t.Errorf("seen again: %s, want 40s", d)
	}
	if d := u.seen("b", t0.Add(40*time.Second)); d != 0 {
		t.Errorf("another task: %s, want 0", d)
	}
	u.forget("a")
	if d := u.seen("a", t0.Add(50*time.Second)); d != 0 {
		t.Errorf("after a known status: %s, want 0", d)
	}
	if d := u.seen("a", t0.Add(50*time.Second+unknownGrace)); d < unknownGrace {
		t.Errorf("past the grace: %s, want at least %s", d, unknownGrace)
	}
}
