package logs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func fixedClock() time.Time { return t0 }

func TestCopyStream(t *testing.T) {
	long := strings.Repeat("x", maxLineSize)
	for name, tc := range map[string]struct {
		in   string
		want []string
	}{
		"empty input":    {in: "", want: nil},
		"one line":       {in: "hello\n", want: []string{"F:hello"}},
		"empty line":     {in: "\n", want: []string{"F:"}},
		"crlf":           {in: "a\r\nb\r\n", want: []string{"F:a", "F:b"}},
		"lone cr kept":   {in: "a\rb\n", want: []string{"F:a\rb"}},
		"partial at eof": {in: "one\ntwo", want: []string{"F:one", "P:two"}},
		"exactly max":    {in: long + "\n", want: []string{"F:" + long}},
		"max plus one":   {in: long + "y\n", want: []string{"P:" + long, "F:y"}},
		"two chunks and partial": {
			in:   long + long + "zz\nrest",
			want: []string{"P:" + long, "P:" + long, "F:zz", "P:rest"},
		},
		"long partial at eof": {in: long + "q", want: []string{"P:" + long, "P:q"}},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := copyStream(strings.NewReader(tc.in), stderr, newEntryWriter(&out, fixedClock)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, streamTexts(t, out.String())[stderr]); diff != "" {
				t.Errorf("entries (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestCopyStreamFormat(t *testing.T) {
	var out bytes.Buffer
	if err := copyStream(strings.NewReader("hi there\nbye"), stdout, newEntryWriter(&out, fixedClock)); err != nil {
		t.Fatal(err)
	}
	want := "2024-01-02T03:04:05.5Z stdout F hi there\n" +
		"2024-01-02T03:04:05.5Z stdout P bye\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("file (-want,+got):\n%s", diff)
	}
}

// closeRecorder records that the driver signalled readiness.
type closeRecorder struct{ closed bool }

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestRunDriverTwoStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ns_pod_uid", "c", "0.log")
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	ready := &closeRecorder{}

	// Each stream writes lines of its own, some longer than an entry, in
	// small pieces so that the two writers really race.
	want := map[stream][]string{}
	var wg sync.WaitGroup
	for s, w := range map[stream]*io.PipeWriter{stdout: outW, stderr: errW} {
		var text strings.Builder
		for i := range 200 {
			line := fmt.Sprintf("%s line %d", s, i)
			if i%50 == 0 {
				line += strings.Repeat("-", maxLineSize+10)
			}
			text.WriteString(line + "\n")
			want[s] = append(want[s], line)
		}
		wg.Go(func() {
			defer w.Close()
			b := []byte(text.String())
			for len(b) > 0 {
				n := min(len(b), 777)
				w.Write(b[:n])
				b = b[n:]
			}
		})
	}
	if err := runDriver(path, Rotation{}, outR, errR, ready, time.Now); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !ready.closed {
		t.Error("readiness was not signalled")
	}

	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for s, entries := range streamTexts(t, string(content)) {
		if diff := cmp.Diff(want[s], joinEntries(entries)); diff != "" {
			t.Errorf("%s lines (-want,+got):\n%s", s, diff)
		}
	}
	checkMode(t, path, 0o640)
	checkMode(t, filepath.Dir(path), 0o750|os.ModeDir)
	checkMode(t, filepath.Dir(filepath.Dir(path)), 0o750|os.ModeDir)
}

// joinEntries joins "P:"/"F:" entries of one stream into lines.
func joinEntries(entries []string) []string {
	var lines []string
	var cur string
	for _, e := range entries {
		cur += e[2:]
		if e[0] == 'F' {
			lines = append(lines, cur)
			cur = ""
		}
	}
	return lines
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != want {
		t.Errorf("mode of %s = %v, want %v", path, st.Mode(), want)
	}
}

func TestRunDriverAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	for _, text := range []string{"first\n", "second\n"} {
		err := runDriver(path, Rotation{}, strings.NewReader(text), strings.NewReader(""), &closeRecorder{}, fixedClock)
		if err != nil {
			t.Fatal(err)
		}
	}
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"F:first", "F:second"}, streamTexts(t, string(content))[stdout]); diff != "" {
		t.Errorf("entries (-want,+got):\n%s", diff)
	}
}

// BenchmarkDriverLines measures the framing of typical 100-byte lines.
func BenchmarkDriverLines(b *testing.B) {
	const lines = 10000
	input := bytes.Repeat([]byte(strings.Repeat("l", 99)+"\n"), lines)
	ew := newEntryWriter(io.Discard, time.Now)
	b.SetBytes(int64(len(input)))
	b.ResetTimer()
	for b.Loop() {
		if err := copyStream(bytes.NewReader(input), stdout, ew); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lines*b.N)/b.Elapsed().Seconds(), "lines/s")
}

// TestCopyStreamReadBoundaries checks that whatever a read returns is
// written at once: text without its newline as a P entry.
func TestCopyStreamReadBoundaries(t *testing.T) {
	long := strings.Repeat("x", maxLineSize)
	for name, tc := range map[string]struct {
		reads []string
		want  []string
	}{
		"prompt":            {reads: []string{"/ # "}, want: []string{"P:/ # "}},
		"prompt then input": {reads: []string{"/ # ", "l", "s\r\n", "a\nb"}, want: []string{"P:/ # ", "P:l", "F:s", "F:a", "P:b"}},
		"crlf across reads": {reads: []string{"one\r", "\ntwo\r\n"}, want: []string{"P:one", "F:", "F:two"}},
		"cr then text":      {reads: []string{"50%\r", "60%\r", "done\n"}, want: []string{"P:50%", "P:\r60%", "F:\rdone"}},
		"cr at eof":         {reads: []string{"bar\r"}, want: []string{"P:bar", "P:\r"}},
		"lone cr read":      {reads: []string{"\r", "\r", "\n"}, want: []string{"P:\r", "F:"}},
		"long read cut":     {reads: []string{long + "ab", "c\n"}, want: []string{"P:" + long, "P:ab", "F:c"}},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := copyStream(&chunkReader{chunks: slices.Clone(tc.reads)}, stdout, newEntryWriter(&out, fixedClock)); err != nil {
				t.Fatal(err)
			}
			got := streamTexts(t, out.String())[stdout]
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("entries (-want,+got):\n%s", diff)
			}
			joined := strings.Join(joinEntries(append(got, "F:")), "\n")
			if want := strings.ReplaceAll(strings.Join(tc.reads, ""), "\r\n", "\n"); joined != want {
				t.Errorf("joined text %.200q, want %.200q", joined, want)
			}
		})
	}
}
