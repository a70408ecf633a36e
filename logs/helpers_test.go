package logs

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// t0 is the time of the first entry in test files.
var t0 = time.Date(2024, 1, 2, 3, 4, 5, 500_000_000, time.UTC)

// at is t0 plus n seconds.
func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

// testEntry describes one entry of a test log file.
type testEntry struct {
	sec     int
	stream  stream
	partial bool
	text    string
}

// entriesText renders entries as CRI log lines.
func entriesText(entries ...testEntry) string {
	var b []byte
	for _, e := range entries {
		b = appendEntry(b, at(e.sec), e.stream, e.partial, []byte(e.text))
	}
	return string(b)
}

// writeLog creates a log file holding entries.
func writeLog(t *testing.T, path string, entries ...testEntry) {
	t.Helper()
	if err := os.WriteFile(path, []byte(entriesText(entries...)), 0o640); err != nil {
		t.Fatal(err)
	}
}

// appendLog appends raw text to a log file.
func appendLog(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is an output that a test can watch while Write runs.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.changed)
	b.changed = make(chan struct{})
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the buffer holds want.
func (b *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		b.mu.Lock()
		got, changed := b.buf.String(), b.changed
		b.mu.Unlock()
		if got == want {
			return
		}
		if !strings.HasPrefix(want, got) {
			t.Fatalf("output %q cannot become %q", got, want)
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("output is %q, waited for %q", got, want)
		}
	}
}

// waitContains waits until the buffer contains want.
func (b *syncBuffer) waitContains(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		b.mu.Lock()
		got, changed := b.buf.String(), b.changed
		b.mu.Unlock()
		if strings.Contains(got, want) {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("output never contained %q", want)
		}
	}
}

// waitForFile waits until the file at path contains want; there is no event
// to wait on for another process's writes, so it polls.
func waitForFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q: %q, %v", path, want, b, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// streamTexts parses a log file and returns each stream's entries as
// "P:text" / "F:text", checking that every line is well formed.
func streamTexts(t *testing.T, content string) map[stream][]string {
	t.Helper()
	got := map[stream][]string{}
	for _, line := range strings.SplitAfter(content, "\n") {
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "\n") {
			t.Fatalf("unterminated line %q", line)
		}
		e, err := parseEntry([]byte(strings.TrimSuffix(line, "\n")))
		if err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		tag := "F:"
		if e.partial {
			tag = "P:"
		}
		got[e.stream] = append(got[e.stream], tag+string(e.text))
	}
	return got
}

// writeRotatedLog creates the log at path as rotated files, one per group of
// entries but the last, which is the current file. A file is rotated a
// millisecond after its last entry.
func writeRotatedLog(t *testing.T, path string, groups ...[]testEntry) {
	t.Helper()
	for _, g := range groups[:len(groups)-1] {
		writeLog(t, rotatedName(path, at(g[len(g)-1].sec).Add(time.Millisecond)), g...)
	}
	writeLog(t, path, groups[len(groups)-1]...)
}

// chunkReader returns one chunk per Read, as a pipe does with separate writes.
type chunkReader struct{ chunks []string }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	if r.chunks[0] = r.chunks[0][n:]; r.chunks[0] == "" {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}
