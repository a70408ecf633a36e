package logs

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

// mixedLog has two streams, a stderr line split around a stdout line and a
// stdout line left unfinished. Its logical lines, in output order, are
// one, three, two, four, unfinished.
var mixedLog = []testEntry{
	{1, stdout, false, "one"},
	{2, stderr, true, "tw"},
	{3, stdout, false, "three"},
	{4, stderr, false, "o"},
	{5, stdout, false, "four"},
	{6, stdout, true, "unfinished"},
}

func TestWrite(t *testing.T) {
	for name, tc := range map[string]struct {
		entries []testEntry
		extra   string // raw text appended to the file
		opts    Options
		want    string
	}{
		"all":        {entries: mixedLog, want: "one\nthree\ntwo\nfour\nunfinished"},
		"empty file": {want: ""},
		"timestamps": {
			entries: mixedLog[:4],
			opts:    Options{Timestamps: true},
			want: "2024-01-02T03:04:06.500000000Z one\n" +
				"2024-01-02T03:04:08.500000000Z three\n" +
				"2024-01-02T03:04:07.500000000Z two\n",
		},
		"since drops by first chunk": {entries: mixedLog, opts: Options{Since: at(3)}, want: "three\nfour\nunfinished"},
		"since exact time kept":      {entries: mixedLog, opts: Options{Since: at(5)}, want: "four\nunfinished"},
		"since after all":            {entries: mixedLog, opts: Options{Since: at(60)}, want: ""},
		"tail 0":                     {entries: mixedLog, opts: Options{TailLines: ptr[int64](0)}, want: ""},
		"tail 1":                     {entries: mixedLog, opts: Options{TailLines: ptr[int64](1)}, want: "unfinished"},
		"tail 2":                     {entries: mixedLog, opts: Options{TailLines: ptr[int64](2)}, want: "four\nunfinished"},
		"tail 3":                     {entries: mixedLog, opts: Options{TailLines: ptr[int64](3)}, want: "two\nfour\nunfinished"},
		"tail 4":                     {entries: mixedLog, opts: Options{TailLines: ptr[int64](4)}, want: "three\ntwo\nfour\nunfinished"},
		"tail negative is all":       {entries: mixedLog, opts: Options{TailLines: ptr[int64](-1)}, want: "one\nthree\ntwo\nfour\nunfinished"},
		"tail more than all":         {entries: mixedLog, opts: Options{TailLines: ptr[int64](100)}, want: "one\nthree\ntwo\nfour\nunfinished"},
		"tail then since": {
			entries: mixedLog,
			opts:    Options{TailLines: ptr[int64](3), Since: at(5)},
			want:    "four\nunfinished",
		},
		"tail joins a split line": {
			entries: []testEntry{
				{1, stdout, false, "before"},
				{2, stdout, true, "a"},
				{3, stderr, false, "x"},
				{4, stdout, true, "b"},
				{5, stdout, false, "c"},
			},
			opts: Options{TailLines: ptr[int64](1)},
			want: "abc\n",
		},
		"tail ignores a half-written entry": {
			entries: []testEntry{mixedLog[0], mixedLog[2]},
			extra:   "2024-01-02T03:04:09Z stdout F half",
			opts:    Options{TailLines: ptr[int64](1)},
			want:    "three\n",
		},
		"limit cuts mid-line":     {entries: mixedLog, opts: Options{LimitBytes: ptr[int64](6)}, want: "one\nth"},
		"limit at line end":       {entries: mixedLog, opts: Options{LimitBytes: ptr[int64](4)}, want: "one\n"},
		"limit beyond all":        {entries: mixedLog, opts: Options{LimitBytes: ptr[int64](1000)}, want: "one\nthree\ntwo\nfour\nunfinished"},
		"limit zero":              {entries: mixedLog, opts: Options{LimitBytes: ptr[int64](0)}, want: ""},
		"limit counts timestamps": {entries: mixedLog, opts: Options{LimitBytes: ptr[int64](33), Timestamps: true}, want: "2024-01-02T03:04:06.500000000Z on"},
		"limit after tail":        {entries: mixedLog, opts: Options{TailLines: ptr[int64](2), LimitBytes: ptr[int64](7)}, want: "four\nun"},
		"live":                    {entries: mixedLog, opts: Options{Live: true}, want: "one\ntwthree\no\nfour\nunfinished"},
		"live since":              {entries: mixedLog, opts: Options{Live: true, Since: at(4)}, want: "o\nfour\nunfinished"},
		"live tail 2":             {entries: mixedLog, opts: Options{Live: true, TailLines: ptr[int64](2)}, want: "four\nunfinished"},
		"live tail 4":             {entries: mixedLog, opts: Options{Live: true, TailLines: ptr[int64](4)}, want: "twthree\no\nfour\nunfinished"},
		"live limit":              {entries: mixedLog, opts: Options{Live: true, LimitBytes: ptr[int64](6)}, want: "one\ntw"},
		"live timestamps": {
			entries: mixedLog[:4],
			opts:    Options{Live: true, Timestamps: true},
			want: "2024-01-02T03:04:06.500000000Z one\n" +
				"2024-01-02T03:04:07.500000000Z tw" +
				"2024-01-02T03:04:08.500000000Z three\n" +
				"o\n",
		},
		"live timestamps since": {
			entries: mixedLog[:4],
			opts:    Options{Live: true, Timestamps: true, Since: at(3)},
			want:    "2024-01-02T03:04:08.500000000Z three\n2024-01-02T03:04:09.500000000Z o\n",
		},
		"malformed lines skipped": {
			entries: mixedLog[:1],
			extra:   "garbage\n" + entriesText(testEntry{9, stderr, false, "after"}),
			want:    "one\nafter\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			writeLog(t, path, tc.entries...)
			appendLog(t, path, tc.extra)
			var out bytes.Buffer
			var skipped []string
			tc.opts.Skipped = func(file string, err error) { skipped = append(skipped, file) }
			if err := Write(context.Background(), &out, path, 0, tc.opts, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("output (-want,+got):\n%s", diff)
			}
			if want := strings.Count(tc.extra, "garbage"); len(skipped) != want || want > 0 && skipped[0] != path {
				t.Errorf("Skipped told of %q, want %s %d times", skipped, path, want)
			}
		})
	}
}

func TestWriteMissingFile(t *testing.T) {
	err := Write(context.Background(), io.Discard, filepath.Join(t.TempDir(), "0.log"), 0, Options{}, nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Write error = %v, want os.ErrNotExist", err)
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

func TestTailStartReadsOnlyTheEnd(t *testing.T) {
	var content strings.Builder
	for i := range 100_000 {
		content.WriteString(entriesText(testEntry{i, stdout, false, "some log line of moderate length"}))
	}
	content.WriteString(entriesText(testEntry{0, stderr, false, "last-but-one"}, testEntry{0, stdout, false, "last"}))
	r := &countingReaderAt{r: strings.NewReader(content.String())}
	size := int64(content.Len())

	start, err := tailStart(r, size, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := content.String()[start:], entriesText(testEntry{0, stderr, false, "last-but-one"}, testEntry{0, stdout, false, "last"}); got != want {
		t.Errorf("tail region = %q, want %q", got, want)
	}
	if r.n > tailLookback+2*tailBlock {
		t.Errorf("read %d bytes of a %d-byte file for 2 lines", r.n, size)
	}
}

// TestTailRandom checks tails of random two-stream files against the
// logical lines computed from the whole file.
func TestTailRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for file := range 20 {
		var entries []testEntry
		for i := range 2000 {
			s := stream(rng.IntN(2))
			entries = append(entries, testEntry{i, s, rng.IntN(2+file%4) == 0, strings.Repeat(string(rune('a'+i%26)), rng.IntN(300))})
		}
		path := filepath.Join(t.TempDir(), "0.log")
		writeLog(t, path, entries...)
		complete, pending := logicalLines(entries)
		for _, n := range []int64{1, 2, 3, 10, 100, 1000, 5000} {
			var out bytes.Buffer
			if err := Write(context.Background(), &out, path, 0, Options{TailLines: &n}, nil); err != nil {
				t.Fatal(err)
			}
			keep := max(0, int(n)-len(pending))
			want := strings.Join(complete[max(0, len(complete)-keep):], "") + strings.Join(pending, "")
			if out.String() != want {
				t.Fatalf("file %d, tail %d: got %d bytes, want %d\ngot:  %.200q\nwant: %.200q", file, n, out.Len(), len(want), out.String(), want)
			}
		}
	}
}

// logicalLines joins entries the simple way: the complete lines in the order
// they end (with newlines) and the unfinished ones, oldest first.
func logicalLines(entries []testEntry) (complete, pending []string) {
	open := map[stream]*strings.Builder{}
	var order []stream
	for _, e := range entries {
		b := open[e.stream]
		if b == nil {
			b = &strings.Builder{}
			open[e.stream] = b
			order = append(order, e.stream)
		}
		b.WriteString(e.text)
		if !e.partial {
			complete = append(complete, b.String()+"\n")
			delete(open, e.stream)
			order = slices.DeleteFunc(order, func(s stream) bool { return s == e.stream })
		}
	}
	for _, s := range order {
		pending = append(pending, open[s].String())
	}
	return complete, pending
}
