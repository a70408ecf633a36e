package logs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// maxLineSize is the most text one entry carries; longer lines are split
// into P entries followed by a final F entry.
//
// NOTE: 16 KiB is the kubelet's and containerd CRI's default
// (max_container_log_line_size).
const maxLineSize = 16 * 1024

// entryWriter writes whole CRI entries to w, one write(2) per entry, under a
// mutex so that entries of the two streams never interleave mid-line.
type entryWriter struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	buf []byte
	err error // the first write error; writing goes on to drain the container
}

func newEntryWriter(w io.Writer, now func() time.Time) *entryWriter {
	return &entryWriter{w: w, now: now, buf: make([]byte, 0, maxLineSize+128)}
}

// write writes one entry stamped with the current time. The time is taken
// under the lock so that timestamps never go backwards in the file.
func (ew *entryWriter) write(s stream, partial bool, text []byte) {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	ew.buf = appendEntry(ew.buf[:0], ew.now().UTC(), s, partial, text)
	if _, err := ew.w.Write(ew.buf); err != nil && ew.err == nil {
		ew.err = fmt.Errorf("writing %s entry: %w", s, err)
	}
}

// firstErr returns the first write error, if any.
func (ew *entryWriter) firstErr() error {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.err
}

// copyStream frames everything read from r as entries of stream s until EOF:
// a line of up to maxLineSize bytes becomes one F entry, a longer one P
// entries of maxLineSize bytes and a final F, and data left without a newline
// at EOF a P entry.
func copyStream(r io.Reader, s stream, ew *entryWriter) error {
	// One byte more than a full entry, so that a line of exactly maxLineSize
	// bytes plus its newline still fits as one F entry.
	br := bufio.NewReaderSize(r, maxLineSize+1)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			ew.write(s, false, trimEOL(line))
		case errors.Is(err, bufio.ErrBufferFull):
			// The last byte goes back to start the next chunk, so every P
			// entry carries exactly maxLineSize bytes.
			ew.write(s, true, line[:len(line)-1])
			if err := br.UnreadByte(); err != nil {
				return fmt.Errorf("splitting long %s line: %w", s, err)
			}
		default:
			// NOTE: like containerd CRI, data without a final newline is
			// written as a partial entry.
			if len(line) > 0 {
				ew.write(s, true, line)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading %s: %w", s, err)
		}
	}
}

// trimEOL removes the trailing "\n" or "\r\n".
//
// NOTE: containerd CRI drops a carriage return before the newline too.
func trimEOL(line []byte) []byte {
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}
