package logs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sirupsen/logrus"
)

// pollInterval is how often a following reader looks for new data.
const pollInterval = 100 * time.Millisecond

// Options are the /log query options.
type Options struct {
	TailLines  *int64
	LimitBytes *int64
	Since      time.Time // zero = all
	Timestamps bool
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
// "<RFC3339Nano> <text>" with Timestamps), applying opts. With follow != nil
// it keeps streaming new lines, then moves to later attempts through
// follow.Next, until that says ok=false and the current file is drained, or
// ctx ends.
//
// Partial entries are joined into one line with the entry that completes
// them; a line the container never finished is written without a newline.
// TailLines applies to the first file and counts logical lines; Since drops
// lines older than it by their first entry's time; LimitBytes counts output
// bytes, timestamps included, and may cut the last line. A file is drained
// (left for the next attempt or ended) only once its driver has released its
// lock. Next is asked with attempt for the first file, attempt+1 for the file
// it returned, and so on, while the current file is being streamed.
// Timestamps have a fixed nine-digit fraction, as the kubelet prints them.
//
// A missing file is an error wrapping os.ErrNotExist; when ctx ends Write
// returns ctx.Err(). If w has a Flush() method (http.Flusher), it is called
// whenever Write has caught up with the file.
func Write(ctx context.Context, w io.Writer, path string, attempt int, opts Options, follow *Follow) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening log: %w", err)
	}
	out := newOutput(w, opts)
	if out.isFull() {
		f.Close()
		return nil
	}
	// NOTE: the API rejects a negative tailLines; here it means all lines,
	// as in the kubelet.
	if opts.TailLines != nil && *opts.TailLines >= 0 {
		if err := seekTail(f, *opts.TailLines, out); err != nil {
			f.Close()
			return err
		}
	}
	for {
		next, more, err := copyFile(ctx, f, attempt, out, follow)
		f.Close()
		if errors.Is(err, errLimitReached) {
			return out.flush()
		}
		if err != nil || !more {
			return err
		}
		attempt++
		if f, err = os.Open(next); err != nil {
			return fmt.Errorf("opening log of attempt %d: %w", attempt, err)
		}
	}
}

// nextAttempt is the answer of Follow.Next.
type nextAttempt struct {
	path string
	ok   bool
}

// copyFile writes f's lines to out; with follow, it keeps reading until Next
// has answered and the file's writer is gone, and returns Next's answer.
func copyFile(ctx context.Context, f *os.File, attempt int, out *output, follow *Follow) (next string, more bool, err error) {
	c := &fileCopy{lines: newLineReader(f), out: out, path: f.Name()}
	if follow == nil {
		if err := c.catchUp(ctx); err != nil {
			return "", false, err
		}
		return "", false, c.finish()
	}

	nextCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	answer := make(chan nextAttempt, 1)
	go func() {
		path, ok := follow.Next(nextCtx, attempt)
		answer <- nextAttempt{path: path, ok: ok}
	}()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()

	var ended *nextAttempt
	for {
		if err := c.catchUp(ctx); err != nil {
			return "", false, err
		}
		if ended != nil {
			gone, err := isWriterGone(f)
			if err != nil {
				return "", false, err
			}
			if gone {
				if err := c.catchUp(ctx); err != nil {
					return "", false, err
				}
				return ended.path, ended.ok, c.finish()
			}
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

// fileCopy is the reading state of one log file.
type fileCopy struct {
	lines *lineReader
	asm   assembler
	out   *output
	path  string
}

// catchUp writes every complete entry up to the current end of the file.
func (c *fileCopy) catchUp(ctx context.Context) error {
	for {
		line, err := c.lines.next()
		if errors.Is(err, io.EOF) {
			return c.out.flush()
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", c.path, err)
		}
		e, err := parseEntry(line)
		if err != nil {
			// NOTE: the kubelet skips lines it cannot parse, too.
			logrus.WithError(err).WithField("path", c.path).Error("skipping log line")
			continue
		}
		if l, ok := c.asm.add(e); ok {
			if err := c.out.line(l); err != nil {
				return err
			}
		}
	}
}

// finish writes the lines left unfinished at the end of the file.
func (c *fileCopy) finish() error {
	for _, l := range c.asm.flush() {
		if err := c.out.line(l); err != nil {
			return err
		}
	}
	return c.out.flush()
}
