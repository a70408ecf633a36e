package main

import (
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// console owns skiff run's output: log lines on standard output, messages
// on standard error and, when standard output is a terminal, one progress
// line kept below the logs. Safe for concurrent use; a writer that fails
// (a closed pipe or terminal) is given up, and broken is closed.
type console struct {
	mu     sync.Mutex
	out    io.Writer
	errw   io.Writer
	tty    int    // standard output's terminal, -1 when it is none
	status string // the progress line, "" for none
	shown  bool   // the progress line is on the screen
	dead   bool   // standard output failed: nothing more goes there

	brokenOnce sync.Once
	broken     chan struct{}
}

func newConsole(out, errw io.Writer) *console {
	c := &console{out: out, errw: errw, tty: -1, broken: make(chan struct{})}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		c.tty = int(f.Fd())
	}
	return c
}

// line writes one log line, prefix and text, keeping the progress line
// below it.
func (c *console) line(prefix string, text []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return
	}
	buf := make([]byte, 0, len(prefix)+len(text)+len(c.status)+16)
	buf = append(buf, c.clear()...)
	buf = append(buf, prefix...)
	buf = append(buf, text...)
	buf = append(buf, '\n')
	buf = append(buf, c.draw()...)
	c.write(buf)
}

// progress replaces the progress line; "" removes it. Only a terminal
// shows it.
func (c *console) progress(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead || c.tty < 0 || (s == c.status && c.shown == (s != "")) {
		return
	}
	buf := c.clear()
	c.status = s
	c.write(append(buf, c.draw()...))
}

// message writes a line to standard error, out of the progress line's way.
func (c *console) message(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.write(c.clear())
	fmt.Fprintf(c.errw, format+"\n", args...)
	c.write(c.draw())
}

// pause clears the progress line and holds all output until the returned
// func is called: for a question to the user.
func (c *console) pause() (resume func()) {
	c.mu.Lock()
	c.write(c.clear())
	return func() {
		c.write(c.draw())
		c.mu.Unlock()
	}
}

// clear is what erases the progress line, if it is shown. Holds mu.
func (c *console) clear() []byte {
	if !c.shown {
		return nil
	}
	c.shown = false
	return []byte("\r\x1b[K")
}

// draw is what shows the progress line, cut to the terminal's width so
// that it never wraps (a wrapped line could not be erased). Holds mu.
func (c *console) draw() []byte {
	if c.tty < 0 || c.status == "" {
		return nil
	}
	s := c.status
	if w, _, err := term.GetSize(c.tty); err == nil && w > 1 && len(s) >= w {
		s = s[:w-1]
	}
	c.shown = true
	return []byte(s)
}

// write writes b to standard output; the first failure gives it up.
// Holds mu.
func (c *console) write(b []byte) {
	if len(b) == 0 || c.dead {
		return
	}
	if _, err := c.out.Write(b); err != nil {
		c.dead, c.shown = true, false
		c.brokenOnce.Do(func() { close(c.broken) })
	}
}
