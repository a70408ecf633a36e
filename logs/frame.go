package logs

import (
	"bytes"
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
//
// An entry w could not take whole (the disk is full) is dropped, and the
// line it belongs to counted as dropped once the line ends: a line is lost
// in whole or in part, and each one is counted once.
type entryWriter struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
	buf []byte
	err error // the first write error; writing goes on to drain the container

	lossy   [numStreams]bool // an entry of the stream's current line was dropped
	dropped int64            // lines dropped so far
	// onDrop, if set, is told the count each time a dropped line ends.
	onDrop func(lines int64, cause error)
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
	n, err := ew.w.Write(ew.buf)
	if err != nil && ew.err == nil {
		ew.err = fmt.Errorf("writing %s entry: %w", s, err)
	}
	if n < len(ew.buf) {
		ew.lossy[s] = true
	}
	if !partial {
		ew.endLine(s)
	}
}

// endStream ends the stream: a line it left unfinished ends here.
func (ew *entryWriter) endStream(s stream) {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	ew.endLine(s)
}

// endLine counts the stream's current line if some of it was dropped.
func (ew *entryWriter) endLine(s stream) {
	if !ew.lossy[s] {
		return
	}
	ew.lossy[s] = false
	ew.dropped++
	if ew.onDrop != nil {
		ew.onDrop(ew.dropped, ew.err)
	}
}

// droppedLines is how many lines were dropped so far.
func (ew *entryWriter) droppedLines() int64 {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.dropped
}

// firstErr returns the first write error, if any.
func (ew *entryWriter) firstErr() error {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	return ew.err
}

// readSize is the most copyStream reads from a stream at once.
const readSize = 64 * 1024

// copyStream frames everything read from r as entries of stream s until EOF.
// Each read is written out at once: every complete line in it as an F entry
// and the text after the last newline as a P entry, so that a prompt or a
// progress bar reaches the log (and attach) without waiting for a newline.
// Lines longer than maxLineSize are cut into P entries of maxLineSize bytes.
//
// NOTE: containerd CRI's writer (pkg/cri/io/logger.go) writes a P entry only
// for a line longer than the maximum or at EOF, and otherwise holds text
// until its newline: kubectl attach on a cluster streams the container's
// output pipe, not the log. Here attach follows the log file, so the driver
// cuts at read boundaries instead; readers join P entries back into lines.
// Like CRI's writer, it never cuts "\r\n" in two: a read ending in '\r' keeps
// that byte for the next one.
func copyStream(r io.Reader, s stream, ew *entryWriter) error {
	buf := make([]byte, 1+readSize)
	held := 0 // 1 while buf[0] is a '\r' kept from the previous read
	for {
		n, err := r.Read(buf[held : held+readSize])
		if n > 0 {
			rest := writeLines(buf[:held+n], s, ew)
			held = 0
			if k := len(rest); k > 0 && rest[k-1] == '\r' {
				rest, held = rest[:k-1], 1
			}
			writeChunks(rest, s, true, ew)
			buf[0] = '\r' // read on after it when held
		}
		if err == nil {
			continue
		}
		if held == 1 {
			ew.write(s, true, buf[:1])
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("reading %s: %w", s, err)
	}
}

// writeLines writes the complete lines of data as entries and returns the
// text after the last newline.
func writeLines(data []byte, s stream, ew *entryWriter) []byte {
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return data
		}
		writeChunks(trimEOL(data[:i+1]), s, false, ew)
		data = data[i+1:]
	}
}

// writeChunks writes text as entries of at most maxLineSize bytes, all P but
// the last, which is P when partial and F otherwise. Empty partial text
// writes nothing; an empty line is one empty F entry.
func writeChunks(text []byte, s stream, partial bool, ew *entryWriter) {
	for len(text) > maxLineSize {
		ew.write(s, true, text[:maxLineSize])
		text = text[maxLineSize:]
	}
	if len(text) > 0 || !partial {
		ew.write(s, partial, text)
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
