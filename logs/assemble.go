package logs

import "time"

// logLine is one logical line: an F entry joined with the P entries of the
// same stream before it, stamped with the first entry's time.
type logLine struct {
	time     time.Time
	text     []byte
	complete bool // false for a line the container never finished
}

// assembler joins entries into logical lines, per stream.
type assembler struct {
	open [numStreams]*logLine
}

// add takes one entry and returns the line it completes, if any. The text of
// a returned line may alias e.text.
func (a *assembler) add(e entry) (logLine, bool) {
	p := a.open[e.stream]
	if e.partial {
		if p == nil {
			p = &logLine{time: e.time}
			a.open[e.stream] = p
		}
		p.text = append(p.text, e.text...)
		return logLine{}, false
	}
	if p == nil {
		return logLine{time: e.time, text: e.text, complete: true}, true
	}
	a.open[e.stream] = nil
	p.text = append(p.text, e.text...)
	p.complete = true
	return *p, true
}

// pending is the number of lines begun but not completed.
func (a *assembler) pending() int {
	n := 0
	for _, p := range a.open {
		if p != nil {
			n++
		}
	}
	return n
}

// flush returns the unfinished lines, oldest first, and forgets them.
func (a *assembler) flush() []logLine {
	var lines []logLine
	for s, p := range a.open {
		if p != nil {
			lines = append(lines, *p)
			a.open[s] = nil
		}
	}
	if len(lines) == 2 && lines[1].time.Before(lines[0].time) {
		lines[0], lines[1] = lines[1], lines[0]
	}
	return lines
}
