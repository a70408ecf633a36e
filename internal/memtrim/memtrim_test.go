package memtrim

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFile is the process's resident file-backed memory (/proc/self/status).
func rssFile(t *testing.T) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

func TestExecutableReadOnly(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	segments, err := readOnlySegments(exe)
	if err != nil {
		t.Fatal(err)
	}
	if len(segments) < 2 {
		t.Fatalf("read-only segments of %s: %+v, want its code and read-only data", exe, segments)
	}
	before := rssFile(t)
	released, err := ExecutableReadOnly()
	if err != nil {
		t.Fatal(err)
	}
	after := rssFile(t)
	if released <= 0 || after >= before {
		t.Errorf("released %d bytes; RssFile %d before, %d after", released, before, after)
	}
	// What the process runs and reads is mapped back as it goes.
	if got := strconv.Itoa(len(strings.Repeat("x", 3))); got != "3" {
		t.Errorf("after the trim: %q", got)
	}
}
