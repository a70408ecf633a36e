package logs

// lineSink turns a container instance's entries, in file order, into output.
type lineSink interface {
	// add takes the next entry.
	add(e entry) error
	// finish ends the instance's log: lines left unfinished end here.
	finish() error
}

func newSink(out *output, live bool) lineSink {
	if live {
		return &liveLines{out: out}
	}
	return &joinedLines{out: out}
}

// joinedLines writes logical lines: P entries joined with the entry that
// completes them, and the lines never completed at the end.
type joinedLines struct {
	asm assembler
	out *output
}

func (j *joinedLines) add(e entry) error {
	if l, ok := j.asm.add(e); ok {
		return j.out.line(l)
	}
	return nil
}

func (j *joinedLines) finish() error {
	for _, l := range j.asm.flush() {
		if err := j.out.line(l); err != nil {
			return err
		}
	}
	return j.out.flush()
}

// liveLines writes each entry's text as soon as it is read, a newline after
// an F entry (Options.Live). A line skipped by the tail is skipped whole;
// Since applies to each entry by its own time; a timestamp goes before the
// first text written of each line.
type liveLines struct {
	out   *output
	open  [numStreams]bool // a line of the stream has begun…
	skip  [numStreams]bool // …and is dropped (tail)
	shown [numStreams]bool // …and some of its text was written
}

func (l *liveLines) add(e entry) error {
	s := e.stream
	if !l.open[s] {
		l.open[s], l.shown[s] = true, false
		l.skip[s] = l.out.skip > 0
		if l.skip[s] {
			l.out.skip--
		}
	}
	l.open[s] = e.partial
	if l.skip[s] || e.time.Before(l.out.since) {
		return nil
	}
	if !l.shown[s] {
		l.shown[s] = true
		if err := l.out.timestamp(e.time); err != nil {
			return err
		}
	}
	if err := l.out.put(e.text); err != nil {
		return err
	}
	if e.partial {
		return nil
	}
	return l.out.put([]byte{'\n'})
}

func (l *liveLines) finish() error {
	l.open = [numStreams]bool{}
	return l.out.flush()
}
