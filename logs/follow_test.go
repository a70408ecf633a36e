package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// liveDriver runs the driver in process on pipes, as the shim would.
type liveDriver struct {
	out, errs *io.PipeWriter
	done      chan error
}

func startLiveDriver(t *testing.T, path string) *liveDriver {
	t.Helper()
	return startRotatingDriver(t, path, Rotation{})
}

// startRotatingDriver is startLiveDriver with a rotation policy.
func startRotatingDriver(t *testing.T, path string, rot Rotation) *liveDriver {
	t.Helper()
	outR, outW := io.Pipe()
	errR, errW := io.Pipe()
	ready := make(chan struct{})
	d := &liveDriver{out: outW, errs: errW, done: make(chan error, 1)}
	go func() {
		d.done <- runDriver(path, rot, outR, errR, closerFunc(func() { close(ready) }), time.Now)
	}()
	<-ready
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop closes the container's streams and waits for the driver to exit.
func (d *liveDriver) stop(t *testing.T) {
	t.Helper()
	if d.done == nil {
		return
	}
	d.out.Close()
	d.errs.Close()
	if err := <-d.done; err != nil {
		t.Errorf("driver: %v", err)
	}
	d.done = nil
}

type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

// writeFollow runs Write with follow in the background.
func writeFollow(ctx context.Context, out io.Writer, path string, opts Options, follow *Follow) <-chan error {
	done := make(chan error, 1)
	go func() { done <- Write(ctx, out, path, 0, opts, follow) }()
	return done
}

// requireRunning fails if Write has returned.
func requireRunning(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("Write returned early: %v", err)
	default:
	}
}

func waitDone(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Write did not return")
		return nil
	}
}

func TestFollowAcrossAttempts(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "0.log"), filepath.Join(dir, "1.log")}
	d0 := startLiveDriver(t, paths[0])

	var mu sync.Mutex
	var asked []int
	released := make(chan struct{})
	follow := &Follow{Next: func(ctx context.Context, attempt int) (string, bool) {
		mu.Lock()
		asked = append(asked, attempt)
		mu.Unlock()
		if attempt == 0 {
			select {
			case <-released:
			case <-ctx.Done():
				return "", false
			}
			return paths[1], true
		}
		return "", false
	}}

	out := newSyncBuffer()
	done := writeFollow(context.Background(), out, paths[0], Options{}, follow)
	io.WriteString(d0.out, "a\n")
	out.waitFor(t, "a\n")
	io.WriteString(d0.errs, "b\n")
	out.waitFor(t, "a\nb\n")

	// The next attempt starts while the first one's driver still drains.
	d1 := startLiveDriver(t, paths[1])
	io.WriteString(d1.out, "c\n")
	close(released)
	io.WriteString(d0.out, "late")
	requireRunning(t, done)
	d0.stop(t)
	out.waitFor(t, "a\nb\nlatec\n")
	io.WriteString(d1.out, "d\n")
	out.waitFor(t, "a\nb\nlatec\nd\n")
	requireRunning(t, done)
	d1.stop(t)

	if err := waitDone(t, done); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("a\nb\nlatec\nd\n", out.String()); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{0, 1}, asked); diff != "" {
		t.Errorf("Next attempts (-want,+got):\n%s", diff)
	}
}

func TestFollowWaitsForTheWriterLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	d := startLiveDriver(t, path)
	ended := &Follow{Next: func(context.Context, int) (string, bool) { return "", false }}

	out := newSyncBuffer()
	done := writeFollow(context.Background(), out, path, Options{}, ended)
	io.WriteString(d.out, "one\n")
	out.waitFor(t, "one\n")
	// Next said the container is done, but its driver still writes.
	io.WriteString(d.out, "two\n")
	out.waitFor(t, "one\ntwo\n")
	io.WriteString(d.errs, "unfinished")
	requireRunning(t, done)
	d.stop(t)

	if err := waitDone(t, done); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("one\ntwo\nunfinished", out.String()); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
}

func TestFollowJoinsLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	d := startLiveDriver(t, path)
	ended := &Follow{Next: func(context.Context, int) (string, bool) { return "", false }}

	out := newSyncBuffer()
	done := writeFollow(context.Background(), out, path, Options{Timestamps: true}, ended)
	long := make([]byte, 3*maxLineSize)
	for i := range long {
		long[i] = 'a' + byte(i%26)
	}
	io.WriteString(d.out, string(long)+"\n")
	d.stop(t)
	if err := waitDone(t, done); err != nil {
		t.Fatal(err)
	}
	stamp, text, _ := strings.Cut(out.String(), " ")
	if _, err := time.Parse(time.RFC3339Nano, stamp); err != nil || len(stamp) != len("2006-01-02T15:04:05.000000000Z") {
		t.Errorf("timestamp %q is not fixed-width RFC3339Nano: %v", stamp, err)
	}
	if text != string(long)+"\n" {
		t.Errorf("text is %d bytes %.80q…, want the %d-byte line", len(text), text, len(long))
	}
}

func TestFollowTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	writeLog(t, path, mixedLog...)
	d := startLiveDriver(t, path) // appends to the existing file
	ended := &Follow{Next: func(context.Context, int) (string, bool) { return "", false }}

	out := newSyncBuffer()
	done := writeFollow(context.Background(), out, path, Options{TailLines: ptr[int64](2)}, ended)
	out.waitFor(t, "four\n")
	io.WriteString(d.out, "-end\n")
	out.waitFor(t, "four\nunfinished-end\n")
	d.stop(t)
	if err := waitDone(t, done); err != nil {
		t.Fatal(err)
	}
}

func TestFollowEnds(t *testing.T) {
	blockNext := &Follow{Next: func(ctx context.Context, _ int) (string, bool) {
		<-ctx.Done()
		return "", false
	}}
	t.Run("context", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "0.log")
		d := startLiveDriver(t, path)
		ctx, cancel := context.WithCancel(context.Background())
		out := newSyncBuffer()
		done := writeFollow(ctx, out, path, Options{}, blockNext)
		io.WriteString(d.out, "x\n")
		out.waitFor(t, "x\n")
		cancel()
		if err := waitDone(t, done); !errors.Is(err, context.Canceled) {
			t.Errorf("Write error = %v, want context.Canceled", err)
		}
	})
	t.Run("limit", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "0.log")
		d := startLiveDriver(t, path)
		out := newSyncBuffer()
		done := writeFollow(context.Background(), out, path, Options{LimitBytes: ptr[int64](5)}, blockNext)
		io.WriteString(d.out, "abc\n")
		out.waitFor(t, "abc\n")
		io.WriteString(d.out, "defg\n")
		if err := waitDone(t, done); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "abc\nd" {
			t.Errorf("output = %q, want %q", got, "abc\nd")
		}
	})
	t.Run("missing next attempt", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "0.log")
		writeLog(t, path, mixedLog[0])
		gone := &Follow{Next: func(context.Context, int) (string, bool) { return path + ".missing", true }}
		err := Write(context.Background(), io.Discard, path, 0, Options{}, gone)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Write error = %v, want fs.ErrNotExist", err)
		}
	})
}

// writePieces writes text to w in pieces of n bytes, so that lines reach the
// driver cut at arbitrary places.
func writePieces(w io.Writer, text string, n int) {
	for len(text) > 0 {
		k := min(n, len(text))
		io.WriteString(w, text[:k])
		text = text[k:]
	}
}

// TestFollowAcrossRotations follows a log while its driver rotates it many
// times: every line of both streams comes out once, whole and in order.
func TestFollowAcrossRotations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	d := startRotatingDriver(t, path, Rotation{MaxSize: 2000, MaxFiles: 1000})
	ended := &Follow{Next: func(context.Context, int) (string, bool) { return "", false }}
	out := newSyncBuffer()
	done := writeFollow(context.Background(), out, path, Options{}, ended)

	_, outLines := numberedLines("out", 3000)
	errText, errLines := numberedLines("err", 3000)
	var wg sync.WaitGroup
	wg.Go(func() { writePieces(d.errs, errText, 77) })
	// Stdout waits for the follower now and then, so that rotations also
	// happen while it reads the current file.
	for i := 0; i < len(outLines); i += 300 {
		batch := outLines[i:min(i+300, len(outLines))]
		writePieces(d.out, strings.Join(batch, "\n")+"\n", 100)
		out.waitContains(t, "\n"+batch[len(batch)-1]+"\n")
	}
	wg.Wait()
	d.stop(t)
	if err := waitDone(t, done); err != nil {
		t.Fatal(err)
	}

	got := map[string][]string{}
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		if line == "" {
			break
		}
		if !strings.HasSuffix(line, "\n") {
			t.Fatalf("unterminated line %q", line)
		}
		prefix, _, _ := strings.Cut(line, " ")
		got[prefix] = append(got[prefix], strings.TrimSuffix(line, "\n"))
	}
	if diff := cmp.Diff(map[string][]string{"out": outLines, "err": errLines}, got); diff != "" {
		t.Errorf("lines (-want,+got):\n%.2000s", diff)
	}
	if rotated, _ := rotatedFiles(path); len(rotated) < 50 {
		t.Errorf("only %d rotations", len(rotated))
	}
}

// TestFollowTailAcrossRotations starts a tail in rotated files and follows
// on through more rotations.
func TestFollowTailAcrossRotations(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	d := startRotatingDriver(t, path, Rotation{MaxSize: 300, MaxFiles: 1000})
	before, beforeLines := numberedLines("before", 40)
	io.WriteString(d.out, before)
	waitForFile(t, path, "before 039")

	ended := &Follow{Next: func(context.Context, int) (string, bool) { return "", false }}
	out := newSyncBuffer()
	done := writeFollow(context.Background(), out, path, Options{TailLines: ptr[int64](15)}, ended)
	want := strings.Join(beforeLines[25:], "\n") + "\n"
	out.waitFor(t, want)
	after, _ := numberedLines("after", 40)
	writePieces(d.out, after, 10)
	d.stop(t)
	if err := waitDone(t, done); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want+after, out.String()); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
}

// TestFollowLive shows that a Live follower gets text without its newline
// at once, through rotations, while a joined one gets the same lines whole.
func TestFollowLive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	d := startRotatingDriver(t, path, Rotation{MaxSize: 60, MaxFiles: 100})
	ended := &Follow{Next: func(context.Context, int) (string, bool) { return "", false }}
	live, joined := newSyncBuffer(), newSyncBuffer()
	liveDone := writeFollow(context.Background(), live, path, Options{Live: true}, ended)
	joinedDone := writeFollow(context.Background(), joined, path, Options{}, ended)

	io.WriteString(d.out, "/ # ")
	live.waitFor(t, "/ # ")
	var want strings.Builder
	want.WriteString("/ # ")
	for i := range 4 {
		for _, piece := range []string{"ec", fmt.Sprintf("ho %d\r", i), "\n", "/ # "} {
			io.WriteString(d.out, piece)
			want.WriteString(strings.ReplaceAll(piece, "\r", ""))
			live.waitFor(t, want.String())
		}
	}
	d.stop(t)
	for _, done := range []<-chan error{liveDone, joinedDone} {
		if err := waitDone(t, done); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(want.String(), joined.String()); diff != "" {
		t.Errorf("joined output (-want,+got):\n%s", diff)
	}
	if rotated, _ := rotatedFiles(path); len(rotated) < 5 {
		t.Errorf("only %d rotations", len(rotated))
	}
}
