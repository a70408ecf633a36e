package logs

import (
	"errors"
	"fmt"
	"io"
	"os"
)

const (
	// tailBlock is how much of the file a backward scan reads at a time.
	tailBlock = 32 * 1024
	// maxHeader bounds the bytes read to learn an entry's stream and tag.
	maxHeader = 128
	// tailLookback is how far before the earliest line taken the scan still
	// looks for earlier chunks of lines it took.
	//
	// NOTE: a line's F entry does not say whether P entries precede it, so
	// without a bound a stream with a single line at the end of a huge file
	// would make the scan read the whole file. Chunks of one line are written
	// close together; a line whose chunks lie further apart comes out
	// truncated, as every line does with the kubelet (which tails entries).
	tailLookback = 256 * 1024
)

// seekTail finds where the last n logical lines of the files' current
// content begin (the files are one log, oldest first): it positions that
// file there and returns its index, and sets o.skip to the number of
// earlier lines the reader must drop.
//
// Only the end of the log is read: the scan goes backwards until n lines
// and the beginnings of the lines still open in either stream are found.
func seekTail(files []*os.File, n int64, o *output, live bool) (int, error) {
	r, err := newConcat(files)
	if err != nil {
		return 0, fmt.Errorf("tailing log: %w", err)
	}
	start, err := tailStart(r, r.size, n)
	if err != nil {
		return 0, fmt.Errorf("tailing %s: %w", r.name(), err)
	}
	complete, pending, err := countLines(io.NewSectionReader(r, start, r.size-start))
	if err != nil {
		return 0, fmt.Errorf("tailing %s: %w", r.name(), err)
	}
	if live {
		// Lines come out as they begin: the last n to begin are kept.
		o.skip = max(0, complete+pending-n)
	} else {
		// Lines still open at the end come out last, so they are kept and
		// fewer complete ones make up the n.
		keep := max(0, n-pending)
		o.skip = max(0, complete-keep)
	}
	i, off := r.locate(start)
	if _, err := files[i].Seek(off, io.SeekStart); err != nil {
		return 0, fmt.Errorf("tailing %s: %w", r.name(), err)
	}
	return i, nil
}

// concat reads files as one, each as large as it was when concat was made.
type concat struct {
	files []*os.File
	ends  []int64 // offset after each file
	size  int64
}

func newConcat(files []*os.File) (*concat, error) {
	c := &concat{files: files}
	for _, f := range files {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		c.size += st.Size()
		c.ends = append(c.ends, c.size)
	}
	return c, nil
}

// name is the current file's, for errors.
func (c *concat) name() string {
	return c.files[len(c.files)-1].Name()
}

// locate returns the file and offset in it of offset off of c.
func (c *concat) locate(off int64) (int, int64) {
	for i, end := range c.ends {
		if off < end {
			return i, off - (end - c.fileSize(i))
		}
	}
	last := len(c.files) - 1
	return last, c.fileSize(last)
}

func (c *concat) fileSize(i int) int64 {
	if i == 0 {
		return c.ends[0]
	}
	return c.ends[i] - c.ends[i-1]
}

// ReadAt implements io.ReaderAt.
func (c *concat) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for len(p) > 0 {
		if off >= c.size {
			return n, io.EOF
		}
		i, at := c.locate(off)
		k := min(int64(len(p)), c.fileSize(i)-at)
		m, err := c.files[i].ReadAt(p[:k], at)
		n += m
		if err != nil && !(errors.Is(err, io.EOF) && int64(m) == k) {
			return n, err
		}
		p, off = p[m:], off+int64(m)
	}
	return n, nil
}

// countLines counts the complete logical lines in r and those still open at
// its end.
func countLines(r io.Reader) (complete, pending int64, err error) {
	lr := newLineReader(r)
	var asm assembler
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return complete, int64(asm.pending()), nil
		}
		if err != nil {
			return 0, 0, err
		}
		e, err := parseEntry(line)
		if err != nil {
			continue // skipped by the reader too
		}
		if _, ok := asm.add(e); ok {
			complete++
		}
	}
}

// tailScan is the state of a backward scan for the last n logical lines.
// Entries arrive last first; a stream is open while the scan is inside one of
// its counted lines and has not yet reached that line's first entry. The scan
// ends when n lines are counted, no stream is open and both streams were
// seen, or tailLookback bytes before the earliest entry taken.
type tailScan struct {
	want, count int64
	seen, open  [numStreams]bool
	start       int64 // offset of the earliest entry taken
}

// visit takes the entry at off and reports whether the scan must go on.
func (t *tailScan) visit(off int64, s stream, partial bool) bool {
	if t.count >= t.want && off < t.start-tailLookback {
		return false
	}
	first := !t.seen[s]
	t.seen[s] = true
	if t.open[s] {
		if partial {
			t.start = off // an earlier chunk of the open line
			return true
		}
		t.open[s] = false // the F before the open line: it began after it
	}
	// A stream's last entry being P means its line is unfinished: that line
	// is output last, so it always counts.
	if t.count < t.want || first && partial {
		t.count++
		t.open[s] = true
		t.start = off
	}
	// Going on until both streams are seen finds an unfinished line that
	// ended before the other stream's last lines.
	return t.count < t.want || t.open[stdout] || t.open[stderr] || !t.seen[stdout] || !t.seen[stderr]
}

// tailStart returns the offset from which the last n logical lines of
// r[:size] can be read. A trailing line without its newline is ignored.
func tailStart(r io.ReaderAt, size, n int64) (int64, error) {
	t := &tailScan{want: n, start: size}
	if n <= 0 {
		return size, nil
	}
	buf := make([]byte, tailBlock)
	hdr := make([]byte, maxHeader)
	var lo int64     // offset of chunk
	var chunk []byte // the block being scanned
	// visitLine visits the line r[start:end], start >= lo.
	visitLine := func(start, end int64) (bool, error) {
		n := min(maxHeader, end-start)
		h := hdr[:n]
		if i := start - lo; i+n <= int64(len(chunk)) {
			h = chunk[i : i+n]
		} else if _, err := r.ReadAt(h, start); err != nil {
			return false, err
		}
		s, partial, err := parseHeader(h)
		if err != nil {
			return true, nil // skipped by the reader too
		}
		return t.visit(start, s, partial), nil
	}

	end := int64(-1) // offset of the newline ending the line being delimited
	for pos := size; pos > 0; {
		lo = max(0, pos-tailBlock)
		chunk = buf[:pos-lo]
		if _, err := r.ReadAt(chunk, lo); err != nil {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' {
				continue
			}
			nl := lo + int64(i)
			if end >= 0 {
				more, err := visitLine(nl+1, end)
				if err != nil || !more {
					return t.start, err
				}
			}
			end = nl
		}
		pos = lo
	}
	if end >= 0 {
		if _, err := visitLine(0, end); err != nil {
			return 0, err
		}
	}
	return t.start, nil
}
