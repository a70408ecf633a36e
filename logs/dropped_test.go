package logs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// failingWriter takes whole entries, except the ones whose index is in
// refuse, of which it takes nothing (as logFile does on a full disk).
type failingWriter struct {
	n      int
	refuse map[int]bool
}

func (w *failingWriter) Write(p []byte) (int, error) {
	i := w.n
	w.n++
	if w.refuse[i] {
		return 0, syscall.ENOSPC
	}
	return len(p), nil
}

// TestEntryWriterCountsDroppedLines: a line is dropped once whatever part
// of it was refused, and a line left open at the end of the stream counts.
func TestEntryWriterCountsDroppedLines(t *testing.T) {
	type write struct {
		s       stream
		partial bool
	}
	tests := map[string]struct {
		writes []write
		refuse []int
		want   int64
	}{
		"nothing refused": {writes: []write{{stdout, false}, {stdout, true}, {stdout, false}}, want: 0},
		"whole lines":     {writes: []write{{stdout, false}, {stdout, false}, {stdout, false}}, refuse: []int{0, 2}, want: 2},
		"a line's first part": {
			writes: []write{{stdout, true}, {stdout, true}, {stdout, false}}, refuse: []int{0}, want: 1,
		},
		"a line's end": {writes: []write{{stdout, true}, {stdout, false}}, refuse: []int{1}, want: 1},
		"streams apart": {
			writes: []write{{stdout, true}, {stderr, false}, {stdout, false}}, refuse: []int{0}, want: 1,
		},
		"open at the end": {writes: []write{{stderr, false}, {stderr, true}}, refuse: []int{1}, want: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fw := &failingWriter{refuse: map[int]bool{}}
			for _, i := range tc.refuse {
				fw.refuse[i] = true
			}
			ew := newEntryWriter(fw, time.Now)
			var reported []int64
			ew.onDrop = func(lines int64, cause error) {
				reported = append(reported, lines)
				if !errors.Is(cause, syscall.ENOSPC) {
					t.Errorf("cause %v, want ENOSPC", cause)
				}
			}
			for _, w := range tc.writes {
				ew.write(w.s, w.partial, []byte("x"))
			}
			ew.endStream(stdout)
			ew.endStream(stderr)
			if got := ew.droppedLines(); got != tc.want {
				t.Errorf("dropped %d lines, want %d", got, tc.want)
			}
			if n := int64(len(reported)); n != tc.want || (n > 0 && reported[n-1] != tc.want) {
				t.Errorf("reported %v, want 1…%d", reported, tc.want)
			}
		})
	}
}

func TestDroppedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ns_p_uid", "c", "0.log")
	if got, err := ReadDropped(context.Background(), path); err != nil || got != (Dropped{}) {
		t.Fatalf("ReadDropped of a log never written = %+v, %v; want none", got, err)
	}
	if err := Prepare(path); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if st, err := os.Stat(DroppedPath(path)); err != nil || st.Size() != droppedRecordSize {
		t.Fatalf("record after Prepare: %v, %v; want %d bytes", st, err, droppedRecordSize)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 0 {
		t.Fatalf("log after Prepare: %v, %v; want an empty file", st, err)
	}
	rec, err := openDroppedRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	long := "write /x/0.log: no space left on device " + string(make([]byte, 300))
	for _, n := range []int64{12345, 7} { // a shorter count overwrites a longer one
		if err := rec.set(n, long); err != nil {
			t.Fatal(err)
		}
	}
	rec.close()
	got, err := ReadDropped(context.Background(), path)
	if err != nil {
		t.Fatalf("ReadDropped: %v", err)
	}
	if got.Lines != 7 || got.Cause != "write /x/0.log: no space left on device" {
		t.Errorf("ReadDropped = %+v", got)
	}
	if st, _ := os.Stat(DroppedPath(path)); st.Size() != droppedRecordSize {
		t.Errorf("record grew to %d bytes", st.Size())
	}
}

func TestParseDropped(t *testing.T) {
	tests := map[string]struct {
		data    string
		want    Dropped
		wantErr bool
	}{
		"prepared":  {data: string(formatDropped(0, "")), want: Dropped{}},
		"counted":   {data: string(formatDropped(3, "ENOSPC")), want: Dropped{Lines: 3, Cause: "ENOSPC"}},
		"empty":     {data: "", want: Dropped{}},
		"corrupt":   {data: "x y\n", wantErr: true},
		"negative":  {data: "-1 \n", wantErr: true},
		"no reason": {data: "4\n", want: Dropped{Lines: 4}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseDropped([]byte(tc.data))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// TestReadDroppedWaitsForTheDriver: the record is read once the driver let
// go of the log, so that lines it drops while draining are counted.
func TestReadDroppedWaitsForTheDriver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	d := startDriverProcess(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := ReadDropped(ctx, path); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReadDropped while the driver runs: %v, want the context's deadline", err)
	}
	d.out.Close()
	d.errs.Close()
	if got, err := ReadDropped(context.Background(), path); err != nil || got.Lines != 0 {
		t.Fatalf("ReadDropped after the driver = %+v, %v", got, err)
	}
}

// TestReadDroppedWaitsThroughRotation: a wait that began on a file the
// driver then rotated goes on with its successor; the rotated file's lock
// going does not mean the driver ended (a pod's exit would otherwise be
// recorded while its log is still being written).
func TestReadDroppedWaitsThroughRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	lf, err := openLogFile(path, Rotation{MaxSize: 64, MaxFiles: 3}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	first, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	entry := []byte("2026-11-29T05:32:35.000000000Z stdout F a line of the log\n")
	for range 2 { // the second entry rotates the first file
		if _, err := lf.Write(entry); err != nil {
			t.Fatal(err)
		}
	}
	if replaced, err := isReplaced(path, first); err != nil || !replaced {
		t.Fatalf("the file was not rotated (%v)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := waitDriverDone(ctx, path, first); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait from a rotated file while the driver writes its successor: %v, want the context's deadline", err)
	}
	if err := lf.close(); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadDropped(context.Background(), path); err != nil || got.Lines != 0 {
		t.Fatalf("ReadDropped after the driver = %+v, %v", got, err)
	}
}
