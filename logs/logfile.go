package logs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// logFile is the driver's output: the current file of one container
// instance, locked, rotated by size. Not safe for concurrent use (the
// entryWriter serialises).
//
// A rotation never leaves path missing and never splits an entry:
//
//  1. the next file is created as a hidden sibling and locked;
//  2. the current file is linked to <path>.<timestamp>;
//  3. the next file is renamed over path;
//  4. the old file is closed, which releases its lock: a reader that sees
//     the lock gone on a file that path no longer names knows the file is
//     complete and that its successor exists;
//  5. the oldest rotated files beyond MaxFiles are removed.
type logFile struct {
	path  string
	rot   Rotation
	now   func() time.Time
	f     *os.File
	size  int64
	stamp time.Time // of the last rotation: names strictly increase
}

// openLogFile opens (or creates) the file at path for appending and locks it.
func openLogFile(path string, rot Rotation, now func() time.Time) (*logFile, error) {
	f, err := createLocked(path, os.O_APPEND)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("opening log file: %w", err)
	}
	return &logFile{path: path, rot: rot, now: now, f: f, size: st.Size()}, nil
}

// Write writes one whole entry, rotating first when it would take the file
// over the size limit. A failed rotation is returned, but the entry is
// still written, to the current file. An entry the file cannot take whole
// (the disk is full) is not written at all: n is 0.
func (l *logFile) Write(entry []byte) (int, error) {
	var rotErr error
	if l.rot.MaxSize > 0 && l.size > 0 && l.size+int64(len(entry)) > l.rot.MaxSize {
		rotErr = l.rotate()
	}
	n, err := l.f.Write(entry)
	if err != nil && n > 0 {
		// NOTE: a torn entry would run into the next one and corrupt both:
		// cut the file back to where it began (shrinking needs no space).
		if terr := l.f.Truncate(l.size); terr != nil {
			err = errors.Join(err, fmt.Errorf("removing a torn entry: %w", terr))
			l.size += int64(n)
			return n, errors.Join(rotErr, err)
		}
		n = 0
	}
	l.size += int64(n)
	return n, errors.Join(rotErr, err)
}

// rotate moves on to a new current file (see logFile).
func (l *logFile) rotate() error {
	tmp := filepath.Join(filepath.Dir(l.path), "."+filepath.Base(l.path)+".next")
	next, err := createLocked(tmp, os.O_APPEND|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("rotating log: %w", err)
	}
	rotated := rotatedName(l.path, l.nextStamp())
	if err := os.Link(l.path, rotated); err != nil {
		next.Close()
		os.Remove(tmp)
		return fmt.Errorf("rotating log: %w", err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		next.Close()
		os.Remove(tmp)
		os.Remove(rotated)
		return fmt.Errorf("rotating log: %w", err)
	}
	old := l.f
	l.f, l.size = next, 0
	if err := old.Close(); err != nil {
		return fmt.Errorf("closing rotated log: %w", err)
	}
	return l.prune()
}

// nextStamp is the time of this rotation, after every earlier one.
func (l *logFile) nextStamp() time.Time {
	t := l.now()
	if !t.After(l.stamp) {
		t = l.stamp.Add(time.Nanosecond)
	}
	l.stamp = t
	return t
}

// prune removes the oldest rotated files so that at most MaxFiles files
// remain, the current one included.
//
// NOTE: oldest first, as the kubelet does, so that a reader behind still
// finds the files after the one it reads.
func (l *logFile) prune() error {
	names, err := rotatedFiles(l.path)
	if err != nil {
		return err
	}
	for len(names) > l.rot.MaxFiles-1 {
		if err := os.Remove(names[0]); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing old log: %w", err)
		}
		names = names[1:]
	}
	return nil
}

// close closes the current file, releasing its lock.
func (l *logFile) close() error {
	return l.f.Close()
}

// createLocked opens path for writing with the extra flags (O_APPEND, and
// O_TRUNC for a file nobody reads yet), creating it and its parents, and takes the exclusive lock that
// tells readers a writer is alive.
func createLocked(path string, flag int) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("creating log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening log file: %w", err)
	}
	// NOTE: blocking, because a reader may hold a shared lock for an instant
	// while it checks for a writer.
	if err := flock(f, syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return f, nil
}
