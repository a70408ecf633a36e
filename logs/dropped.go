package logs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The dropped-lines record of a container instance: a small file beside
// its log, <attempt>.dropped, holding "<lines> <first error>" padded with
// spaces to a fixed size. The driver counts there the lines it could not
// write (the disk was full), so the loss survives the driver and skiffd
// and reaches the pod worker, which reports it when the instance exits.
//
// NOTE: Prepare writes the record at its full size before the container
// starts, while the disk has room; the driver then only overwrites those
// bytes in place, which needs no new block, so the count can be kept on
// a full disk.
const droppedRecordSize = 256

// DroppedPath is the dropped-lines record of the log at path.
func DroppedPath(path string) string {
	return strings.TrimSuffix(path, ".log") + ".dropped"
}

// Prepare creates the log file at path (empty, unless it exists) with its
// directories and its dropped-lines record, before the driver starts:
// failing here for lack of space fails the container's creation, which is
// retried, rather than its start.
//
// NOTE: the kubelet creates a container's log directory when it creates
// the container, and fails that creation when it cannot.
func Prepare(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("creating log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("creating log file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("creating log file: %w", err)
	}
	rec, err := openDroppedRecord(path)
	if err != nil {
		return err
	}
	return rec.close()
}

// droppedRecord is the driver's handle on the record.
type droppedRecord struct {
	f *os.File
}

// openDroppedRecord opens the record of the log at path, writing it at its
// full size if it is new or short.
func openDroppedRecord(path string) (*droppedRecord, error) {
	f, err := os.OpenFile(DroppedPath(path), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("creating dropped-lines record: %w", err)
	}
	st, err := f.Stat()
	if err == nil && st.Size() < droppedRecordSize {
		_, err = f.WriteAt(formatDropped(0, ""), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("creating dropped-lines record: %w", err)
	}
	return &droppedRecord{f: f}, nil
}

// set overwrites the record with lines and the first error.
func (r *droppedRecord) set(lines int64, cause string) error {
	if _, err := r.f.WriteAt(formatDropped(lines, cause), 0); err != nil {
		return fmt.Errorf("recording dropped log lines: %w", err)
	}
	return nil
}

func (r *droppedRecord) close() error { return r.f.Close() }

// formatDropped is the record's content: "<lines> <cause>", spaces, "\n".
func formatDropped(lines int64, cause string) []byte {
	b := strconv.AppendInt(make([]byte, 0, droppedRecordSize), lines, 10)
	b = append(b, ' ')
	room := droppedRecordSize - 1 - len(b)
	cause = strings.ReplaceAll(cause, "\n", " ")
	if len(cause) > room {
		cause = cause[:room]
	}
	b = append(b, cause...)
	for len(b) < droppedRecordSize-1 {
		b = append(b, ' ')
	}
	return append(b, '\n')
}

// Dropped is what a driver could not write to a log.
type Dropped struct {
	Lines int64  // lines lost in whole or in part
	Cause string // the first write error, e.g. "... no space left on device"
}

// ReadDropped returns the dropped-lines record of the log at path, once
// its driver is done: it waits while a driver holds the log. If ctx ends
// first, it returns the count so far with the context's error. A log
// without a record (written by an older driver, or never started) has none
// dropped.
func ReadDropped(ctx context.Context, path string) (Dropped, error) {
	waitErr := WaitComplete(ctx, path)
	d, err := readDropped(path)
	if err != nil {
		return d, err
	}
	return d, waitErr
}

func readDropped(path string) (Dropped, error) {
	data, err := os.ReadFile(DroppedPath(path))
	if errors.Is(err, os.ErrNotExist) {
		return Dropped{}, nil
	}
	if err != nil {
		return Dropped{}, fmt.Errorf("reading dropped-lines record: %w", err)
	}
	return parseDropped(data)
}

func parseDropped(data []byte) (Dropped, error) {
	text := string(bytes.TrimRight(data, " \n\x00"))
	if text == "" {
		return Dropped{}, nil
	}
	count, cause, _ := strings.Cut(text, " ")
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || n < 0 {
		return Dropped{}, fmt.Errorf("corrupt dropped-lines record %q", text)
	}
	return Dropped{Lines: n, Cause: strings.TrimSpace(cause)}, nil
}

// writerPoll is how often WaitComplete looks at the log's lock.
const writerPoll = 20 * time.Millisecond

// WaitComplete waits until no driver writes the log at path any more (or it
// does not exist), or ctx ends: then the log holds all its container wrote.
// A driver ends once its container's task is deleted, shortly after the
// container exited.
func WaitComplete(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("opening log: %w", err)
	}
	return waitDriverDone(ctx, path, f)
}

// waitDriverDone waits, from f, a file that path named, until the driver
// of the log at path ended, and closes what it opened. f unlocked is not
// enough: the driver also lets go of a file when it rotates it, and then
// path names its successor, which is waited for in turn.
func waitDriverDone(ctx context.Context, path string, f *os.File) error {
	for {
		gone, err := isWriterGone(f)
		if err != nil {
			f.Close()
			return err
		}
		if gone {
			replaced, err := isReplaced(path, f)
			f.Close()
			if err != nil || !replaced {
				return err
			}
			if f, err = os.Open(path); errors.Is(err, os.ErrNotExist) {
				return nil
			} else if err != nil {
				return fmt.Errorf("opening log: %w", err)
			}
			continue
		}
		t := time.NewTimer(writerPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return fmt.Errorf("waiting for the log driver of %s: %w", path, ctx.Err())
		case <-t.C:
		}
	}
}
