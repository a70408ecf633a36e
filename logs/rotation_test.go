package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDriverArg(t *testing.T) {
	for name, tc := range map[string]struct {
		path string
		rot  Rotation
		arg  string // "" = do not check the form
	}{
		"no rotation is the path": {path: "/logs/ns_p_u/c/0.log", arg: "/logs/ns_p_u/c/0.log"},
		"rotation": {
			path: "/logs/ns_p_u/c/0.log", rot: Rotation{MaxSize: 10 << 20, MaxFiles: 5},
			arg: "file:///logs/ns_p_u/c/0.log?max-files=5&max-size=10485760",
		},
		"odd characters": {path: "/data dir/a?b&c=d%/#x/0.log", rot: Rotation{MaxSize: 1, MaxFiles: 2}},
	} {
		t.Run(name, func(t *testing.T) {
			arg := tc.rot.Arg(tc.path)
			if tc.arg != "" && arg != tc.arg {
				t.Errorf("Arg = %q, want %q", arg, tc.arg)
			}
			path, rot, err := ParseDriverArg(arg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.path, path); diff != "" {
				t.Errorf("path (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.rot, rot); diff != "" {
				t.Errorf("rotation (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestParseDriverArgErrors(t *testing.T) {
	for name, arg := range map[string]string{
		"relative path":  "logs/0.log",
		"other scheme":   "http://host/0.log?max-size=1&max-files=2",
		"no max size":    "file:///0.log?max-files=2",
		"one file":       "file:///0.log?max-size=10&max-files=1",
		"relative file":  "file:0.log?max-size=10&max-files=2",
		"bad max files":  "file:///0.log?max-size=10&max-files=x",
		"empty argument": "",
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := ParseDriverArg(arg); err == nil {
				t.Errorf("ParseDriverArg(%q) succeeded", arg)
			}
		})
	}
}

// logFiles returns the contents of the log at path, oldest file first.
func logFiles(t *testing.T, path string) []string {
	t.Helper()
	names, err := rotatedFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, name := range append(names, path) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		contents = append(contents, string(b))
	}
	return contents
}

// numberedLines is "<prefix> 000\n" … for n lines.
func numberedLines(prefix string, n int) (text string, lines []string) {
	var b strings.Builder
	for i := range n {
		line := fmt.Sprintf("%s %03d", prefix, i)
		b.WriteString(line + "\n")
		lines = append(lines, line)
	}
	return b.String(), lines
}

func TestRunDriverRotates(t *testing.T) {
	// Each entry is 41 bytes ("2024-01-02T03:04:05.5Z stdout F line 000\n"):
	// nine fit in 400 bytes.
	text, lines := numberedLines("line", 100)
	for name, tc := range map[string]struct {
		rot       Rotation
		wantFiles int
	}{
		"all files kept": {rot: Rotation{MaxSize: 400, MaxFiles: 100}, wantFiles: 12},
		"oldest removed": {rot: Rotation{MaxSize: 400, MaxFiles: 3}, wantFiles: 3},
		"never rotated":  {rot: Rotation{MaxSize: 0, MaxFiles: 3}, wantFiles: 1},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			err := runDriver(path, tc.rot, strings.NewReader(text), strings.NewReader(""), &closeRecorder{}, fixedClock)
			if err != nil {
				t.Fatal(err)
			}
			files := logFiles(t, path)
			if len(files) != tc.wantFiles {
				t.Errorf("%d files, want %d", len(files), tc.wantFiles)
			}
			var got []string
			for i, content := range files {
				if tc.rot.MaxSize > 0 && int64(len(content)) > tc.rot.MaxSize {
					t.Errorf("file %d has %d bytes, more than %d", i, len(content), tc.rot.MaxSize)
				}
				if i < len(files)-1 && len(content) != 9*41 {
					t.Errorf("rotated file %d has %d bytes, want 9 entries", i, len(content))
				}
				got = append(got, joinEntries(streamTexts(t, content)[stdout])...)
			}
			// The files hold whole lines, the last ones, in order.
			if diff := cmp.Diff(lines[len(lines)-len(got):], got); diff != "" {
				t.Errorf("lines kept (-want,+got):\n%s", diff)
			}
			if tc.rot.MaxFiles >= 12 && len(got) != len(lines) {
				t.Errorf("%d lines kept, want all %d", len(got), len(lines))
			}
			checkMode(t, path, 0o640)
			if hidden, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(hidden) > 0 {
				t.Errorf("temporary files left: %q", hidden)
			}
		})
	}
}

func TestRunDriverEntryLargerThanMaxSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	in := strings.Repeat("x", 100) + "\n" + strings.Repeat("y", 100) + "\nz"
	err := runDriver(path, Rotation{MaxSize: 50, MaxFiles: 10}, strings.NewReader(in), strings.NewReader(""), &closeRecorder{}, fixedClock)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, content := range logFiles(t, path) {
		got = append(got, streamTexts(t, content)[stdout])
	}
	want := [][]string{{"F:" + strings.Repeat("x", 100)}, {"F:" + strings.Repeat("y", 100)}, {"P:z"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries per file (-want,+got):\n%s", diff)
	}
}

// TestRotatedNamesSort checks that rotations in the same instant (or with
// the clock going back) still get names in rotation order.
func TestRotatedNamesSort(t *testing.T) {
	clock := []time.Time{t0, t0, t0.Add(-time.Hour), t0.Add(time.Second)}
	lf := &logFile{path: "/l/0.log", now: func() time.Time { c := clock[0]; clock = clock[1:]; return c }}
	var names []string
	for range 4 {
		names = append(names, rotatedName(lf.path, lf.nextStamp()))
	}
	want := []string{
		"/l/0.log.20240102-030405.500000000",
		"/l/0.log.20240102-030405.500000001",
		"/l/0.log.20240102-030405.500000002",
		"/l/0.log.20240102-030406.500000000",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("names (-want,+got):\n%s", diff)
	}
}

// rotatedLog is mixedLog spread over three files, a stderr line and the
// stdout line "four" split across files, with files as the rotation leaves
// them: each ends with a whole entry. Its logical lines, in output order,
// are one, three, two, four, unfinished.
var rotatedLog = [][]testEntry{
	{{1, stdout, false, "one"}, {2, stderr, true, "tw"}},
	{{3, stdout, false, "three"}, {4, stderr, false, "o"}, {5, stdout, true, "fo"}},
	{{6, stdout, false, "ur"}, {7, stdout, true, "unfinished"}},
}

func TestWriteRotated(t *testing.T) {
	for name, tc := range map[string]struct {
		opts Options
		want string
	}{
		"all":    {want: "one\nthree\ntwo\nfour\nunfinished"},
		"tail 1": {opts: Options{TailLines: ptr[int64](1)}, want: "unfinished"},
		"tail 2": {opts: Options{TailLines: ptr[int64](2)}, want: "four\nunfinished"},
		"tail 3": {opts: Options{TailLines: ptr[int64](3)}, want: "two\nfour\nunfinished"},
		"tail 9": {opts: Options{TailLines: ptr[int64](9)}, want: "one\nthree\ntwo\nfour\nunfinished"},
		"since":  {opts: Options{Since: at(3)}, want: "three\nfour\nunfinished"},
		"limit":  {opts: Options{LimitBytes: ptr[int64](12)}, want: "one\nthree\ntw"},
		"timestamps": {opts: Options{Timestamps: true, TailLines: ptr[int64](2)},
			want: "2024-01-02T03:04:10.500000000Z four\n2024-01-02T03:04:12.500000000Z unfinished"},
		"live":        {opts: Options{Live: true}, want: "one\ntwthree\no\nfour\nunfinished"},
		"live tail 2": {opts: Options{Live: true, TailLines: ptr[int64](2)}, want: "four\nunfinished"},
		"live since":  {opts: Options{Live: true, Since: at(4)}, want: "o\nfour\nunfinished"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			writeRotatedLog(t, path, rotatedLog...)
			var out bytes.Buffer
			if err := Write(context.Background(), &out, path, 0, tc.opts, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("output (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestWriteLiveSkipsOlderFiles checks that a Live read with Since does not
// read files rotated before Since: the one here lies, holding a later entry.
func TestWriteLiveSkipsOlderFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeLog(t, rotatedName(path, at(1)), testEntry{5, stdout, false, "never read"})
	writeLog(t, rotatedName(path, at(3)), testEntry{2, stdout, false, "old"}, testEntry{3, stdout, false, "new"})
	writeLog(t, path, testEntry{4, stdout, false, "newer"})
	for name, tc := range map[string]struct {
		opts Options
		want string
	}{
		"live since":      {opts: Options{Live: true, Since: at(2)}, want: "old\nnew\nnewer\n"},
		"live since tail": {opts: Options{Live: true, Since: at(2), TailLines: ptr[int64](9)}, want: "never read\nold\nnew\nnewer\n"},
		"joined since":    {opts: Options{Since: at(2)}, want: "never read\nold\nnew\nnewer\n"},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Write(context.Background(), &out, path, 0, tc.opts, nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("output (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestTailRandomRotated checks tails of random two-stream logs cut into
// rotated files at random entries against the logical lines of the whole.
func TestTailRandomRotated(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for file := range 10 {
		var entries []testEntry
		for i := range 1000 {
			s := stream(rng.IntN(2))
			entries = append(entries, testEntry{i, s, rng.IntN(3) == 0, strings.Repeat(string(rune('a'+i%26)), rng.IntN(300))})
		}
		var groups [][]testEntry
		for rest := entries; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(200))
			groups, rest = append(groups, rest[:n]), rest[n:]
		}
		path := filepath.Join(t.TempDir(), "0.log")
		writeRotatedLog(t, path, groups...)
		complete, pending := logicalLines(entries)
		for _, n := range []int64{1, 3, 50, 400, 2000} {
			var out bytes.Buffer
			if err := Write(context.Background(), &out, path, 0, Options{TailLines: &n}, nil); err != nil {
				t.Fatal(err)
			}
			keep := max(0, int(n)-len(pending))
			want := strings.Join(complete[max(0, len(complete)-keep):], "") + strings.Join(pending, "")
			if out.String() != want {
				t.Fatalf("log %d (%d files), tail %d: got %d bytes, want %d", file, len(groups), n, out.Len(), len(want))
			}
		}
	}
}

func TestOpenChain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	names := []string{rotatedName(path, at(1)), rotatedName(path, at(2)), rotatedName(path, at(3))}
	for i, name := range append(names, path) {
		writeLog(t, name, testEntry{i, stdout, false, fmt.Sprint("file", i)})
	}
	os.WriteFile(filepath.Join(dir, ".0.log.next"), nil, 0o640)
	os.WriteFile(filepath.Join(dir, "0.log.notatime"), nil, 0o640)
	os.WriteFile(filepath.Join(dir, "1.log"), nil, 0o640)
	stat := func(name string) os.FileInfo {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// A file that was pruned: no name has it any more.
	pruned, err := os.CreateTemp(dir, "pruned")
	if err != nil {
		t.Fatal(err)
	}
	prunedInfo := stat(pruned.Name())
	os.Remove(pruned.Name())

	for name, tc := range map[string]struct {
		prev    os.FileInfo
		linkCur bool // the current file is linked as rotated, as mid-rotation
		want    []string
	}{
		"all":                       {want: []string{"file0", "file1", "file2", "file3"}},
		"after a rotated one":       {prev: stat(names[1]), want: []string{"file2", "file3"}},
		"after the newest":          {prev: stat(names[2]), want: []string{"file3"}},
		"after a pruned one":        {prev: prunedInfo, want: []string{"file0", "file1", "file2", "file3"}},
		"current rotated meanwhile": {linkCur: true, want: []string{"file0", "file1", "file2", "file3"}},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.linkCur {
				link := rotatedName(path, at(4))
				if err := os.Link(path, link); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(link)
			}
			files, err := openChain(path, tc.prev)
			if err != nil {
				t.Fatal(err)
			}
			defer closeFiles(files)
			var got []string
			for _, f := range files {
				b, err := io.ReadAll(f)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, joinEntries(streamTexts(t, string(b))[stdout])...)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("files (-want,+got):\n%s", diff)
			}
		})
	}
	if _, err := openChain(filepath.Join(dir, "5.log"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("openChain of a missing log: %v, want os.ErrNotExist", err)
	}
}
