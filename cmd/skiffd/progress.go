package main

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progressInterval is how often the progress line is redrawn.
const progressInterval = 200 * time.Millisecond

// progress shows, on a terminal, how far a transfer is: one line rewritten
// in place with the bytes read, the total when known, and the rate.
type progress struct {
	w     io.Writer
	what  string
	total int64 // -1 when unknown
	start time.Time
	read  atomic.Int64
	eof   atomic.Bool
	done  chan struct{}
	wg    sync.WaitGroup
}

// newProgress starts redrawing the line for what on w until stop.
func newProgress(w io.Writer, what string, total int64) *progress {
	p := &progress{w: w, what: what, total: total, start: time.Now(), done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(progressInterval)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
				fmt.Fprintf(p.w, "\r\x1b[K%s", p.line(time.Now()))
			}
		}
	}()
	return p
}

// reader counts what is read through r.
func (p *progress) reader(r io.Reader) io.Reader { return &countingReader{r: r, p: p} }

// stop ends the redrawing and leaves a summary line in its place.
func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
	n := p.read.Load()
	elapsed := time.Since(p.start)
	fmt.Fprintf(p.w, "\r\x1b[K%s: %s in %s (%s)\n", p.what, humanBytes(n), elapsed.Round(100*time.Millisecond), rate(n, elapsed))
}

// line is the progress line at now.
func (p *progress) line(now time.Time) string {
	n := p.read.Load()
	elapsed := now.Sub(p.start)
	s := p.what + ": " + humanBytes(n)
	if p.total > 0 {
		s += fmt.Sprintf(" of %s (%d%%)", humanBytes(p.total), n*100/p.total)
	}
	s += ", " + rate(n, elapsed)
	if p.eof.Load() {
		s += ", waiting for skiffd to unpack"
	}
	return s
}

// rate is n bytes over elapsed, per second.
func rate(n int64, elapsed time.Duration) string {
	if elapsed <= 0 {
		return "- /s"
	}
	return humanBytes(int64(float64(n)/elapsed.Seconds())) + "/s"
}

type countingReader struct {
	r io.Reader
	p *progress
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.read.Add(int64(n))
	if errors.Is(err, io.EOF) {
		c.p.eof.Store(true)
	}
	return n, err
}
