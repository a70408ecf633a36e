package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// pollInterval is how often a following reader looks for new data.
const pollInterval = 100 * time.Millisecond

// Options are the /log query options.
type Options struct {
	TailLines  *int64
	LimitBytes *int64
	Since      time.Time // zero = all
	Timestamps bool
	// Live writes each entry's text as soon as it is read instead of
	// joining partial entries into whole lines first, for attach: a prompt
	// shows before its line ends. Since then drops entries (not lines) older
	// than it, and TailLines counts lines by where they begin.
	Live bool
	// Skipped, if set, is told of each line that is no CRI log entry: it
	// is left out, as the kubelet leaves it out (and logs it).
	Skipped func(path string, err error)
}

// Follow tells Write how to go on after the current attempt's file:
// the API handler answers from the Pod's status.
type Follow struct {
	// Next returns the path of the attempt after the current one, waiting
	// until it exists; ok=false when the container ended for good. It must
	// return when ctx ends.
	Next func(ctx context.Context, attempt int) (path string, ok bool)
}

// Write writes the content of the given CRI log file to w (text only, or
// "<RFC3339Nano> <text>" with Timestamps), applying opts. The rotated files
// of path (path.<timestamp>) come first, oldest first. With follow != nil it
// keeps streaming new lines, through rotations, then moves to later attempts
// through follow.Next, until that says ok=false and the current file is
// drained, or ctx ends.
//
// Partial entries are joined into one line with the entry that completes
// them (unless opts.Live); a line the container never finished is written
// without a newline. TailLines applies to the first attempt and counts
// logical lines; Since drops lines older than it by their first entry's
// time; LimitBytes counts output bytes, timestamps included, and may cut the
// last line. A file is drained (left for its successor, the next attempt, or
// ended) only once its driver has released its lock. Next is asked with
// attempt for the first file, attempt+1 for the file it returned, and so
// on, while the current file is being streamed. Timestamps have a fixed
// nine-digit fraction, as the kubelet prints them.
//
// A missing file is an error wrapping os.ErrNotExist; when ctx ends Write
// returns ctx.Err(). If w has a Flush() method (http.Flusher), it is called
// whenever Write has caught up with the file.
//
// NOTE: the kubelet reads only an instance's current file, so that after a
// rotation kubectl logs no longer shows the older output; skiff keeps
// rotated files uncompressed and reads them too, so a pod's whole retained
// log stays readable.
func Write(ctx context.Context, w io.Writer, path string, attempt int, opts Options, follow *Follow) error {
	files, err := openChain(path, nil)
	if err != nil {
		return err
	}
	out := newOutput(w, opts)
	if out.isFull() {
		closeFiles(files)
		return nil
	}
	// NOTE: the API rejects a negative tailLines; here it means all lines,
	// as in the kubelet.
	if opts.TailLines != nil && *opts.TailLines >= 0 {
		first, err := seekTail(files, *opts.TailLines, out, opts.Live)
		if err != nil {
			closeFiles(files)
			return err
		}
		closeFiles(files[:first])
		files = files[first:]
	}
	if opts.Live && opts.TailLines == nil {
		files = skipOlder(files, path, opts.Since)
	}
	c := &logCopy{sink: newSink(out, opts.Live), out: out, follow: follow, skipped: opts.Skipped}
	for {
		next, more, err := c.copyAttempt(ctx, path, files, attempt)
		if errors.Is(err, errLimitReached) {
			return out.flush()
		}
		if err != nil || !more {
			return err
		}
		attempt, path = attempt+1, next
		if files, err = openChain(path, nil); err != nil {
			return fmt.Errorf("opening log of attempt %d: %w", attempt, err)
		}
	}
}

// skipOlder closes and drops the leading rotated files rotated before
// since: every entry in them is older than since. (With Options.Live, Since
// drops entries, so the output is the same; attach starts at once even
// after a long log.)
func skipOlder(files []*os.File, path string, since time.Time) []*os.File {
	for len(files) > 1 {
		t, err := time.Parse(rotatedFormat, strings.TrimPrefix(files[0].Name(), path+"."))
		if err != nil || !t.Before(since) {
			break
		}
		files[0].Close()
		files = files[1:]
	}
	return files
}

// nextAttempt is the answer of Follow.Next.
type nextAttempt struct {
	path string
	ok   bool
}

// logCopy is the reading state of a Write.
type logCopy struct {
	sink    lineSink
	out     *output
	follow  *Follow
	skipped func(path string, err error) // Options.Skipped
	lines   *lineReader                  // of the file being read
	name    string                       // of the file being read
}

// copyAttempt writes the lines of one container instance's files (see
// openChain; the last one is the current file) to the output. With follow,
// it keeps reading through rotations until Next has answered and the
// current file's writer is gone, and returns Next's answer. It closes files.
func (c *logCopy) copyAttempt(ctx context.Context, path string, files []*os.File, attempt int) (next string, more bool, err error) {
	defer func() { closeFiles(files) }()
	if err := c.readComplete(ctx, files[:len(files)-1]); err != nil {
		return "", false, err
	}
	files = files[len(files)-1:]
	cur := files[0]
	c.open(cur)
	if c.follow == nil {
		if err := c.catchUp(ctx); err != nil {
			return "", false, err
		}
		return "", false, c.sink.finish()
	}

	nextCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	answer := make(chan nextAttempt, 1)
	go func() {
		path, ok := c.follow.Next(nextCtx, attempt)
		answer <- nextAttempt{path: path, ok: ok}
	}()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()

	var ended *nextAttempt
	for {
		if err := c.catchUp(ctx); err != nil {
			return "", false, err
		}
		st, err := c.settle(ctx, path, cur, ended != nil)
		if err != nil {
			return "", false, err
		}
		switch st {
		case fileEnded:
			return ended.path, ended.ok, c.sink.finish()
		case fileRotated:
			if files, err = c.advance(ctx, path, cur); err != nil {
				return "", false, err
			}
			cur = files[0]
			continue
		}
		select {
		case <-ctx.Done():
			return "", false, ctx.Err()
		case a := <-answer:
			ended, answer = &a, nil
		case <-ticker.C:
		}
	}
}

// fileState is where a followed file stands once read to its end.
type fileState int

const (
	fileOpen    fileState = iota // its writer may still add to it
	fileRotated                  // complete, and path names its successor
	fileEnded                    // complete, still path, and the instance ended
)

// settle finds where the followed file cur stands, catching up with what
// its writer wrote before it let go. ended says Next has answered.
//
// NOTE: the driver renames the next file over path before it releases
// the lock on the old one, so once the lock is gone a rotation shows.
func (c *logCopy) settle(ctx context.Context, path string, cur *os.File, ended bool) (fileState, error) {
	replaced, err := isReplaced(path, cur)
	if err != nil || !replaced && !ended {
		return fileOpen, err
	}
	gone, err := isWriterGone(cur)
	if err != nil || !gone {
		return fileOpen, err
	}
	if err := c.catchUp(ctx); err != nil {
		return fileOpen, err
	}
	if !replaced {
		if replaced, err = isReplaced(path, cur); err != nil {
			return fileOpen, err
		}
	}
	if replaced {
		return fileRotated, nil
	}
	return fileEnded, nil
}

// advance opens the files after the rotated file cur, reads the complete
// ones and returns the current one, ready to read. It closes cur.
func (c *logCopy) advance(ctx context.Context, path string, cur *os.File) ([]*os.File, error) {
	st, err := cur.Stat()
	cur.Close()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	files, err := openChain(path, st)
	if err != nil {
		return nil, err
	}
	if err := c.readComplete(ctx, files[:len(files)-1]); err != nil {
		closeFiles(files)
		return nil, err
	}
	last := files[len(files)-1]
	c.open(last)
	return []*os.File{last}, nil
}

// readComplete reads files that no one writes any more, closing them.
func (c *logCopy) readComplete(ctx context.Context, files []*os.File) error {
	for _, f := range files {
		c.open(f)
		err := c.catchUp(ctx)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// open makes f the file being read.
//
// NOTE: each file gets its own line reader: a line torn at the end of a
// rotated file (a failed write) is dropped, not glued to the next file's
// first line. P entries still join across files.
func (c *logCopy) open(f *os.File) {
	c.lines, c.name = newLineReader(f), f.Name()
}

// catchUp writes every complete entry up to the current end of the file.
func (c *logCopy) catchUp(ctx context.Context) error {
	for {
		line, err := c.lines.next()
		if errors.Is(err, io.EOF) {
			return c.out.flush()
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", c.name, err)
		}
		e, err := parseEntry(line)
		if err != nil {
			if c.skipped != nil {
				c.skipped(c.name, err)
			}
			continue
		}
		if err := c.sink.add(e); err != nil {
			return err
		}
	}
}
