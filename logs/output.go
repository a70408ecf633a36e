package logs

import (
	"bufio"
	"errors"
	"io"
	"time"
)

// errLimitReached ends reading once Options.LimitBytes bytes are written.
var errLimitReached = errors.New("byte limit reached")

// output formats logical lines for the client, applying since, timestamps,
// the tail's skip count and the byte limit.
type output struct {
	w          *bufio.Writer
	flusher    interface{ Flush() } // the destination's, e.g. http.Flusher
	since      time.Time
	timestamps bool
	skip       int64 // lines still to drop (tail), counted by the lineSink
	limited    bool
	remain     int64
	stamp      []byte
	dirty      bool // written since the last flush
}

func newOutput(w io.Writer, opts Options) *output {
	o := &output{
		w:          bufio.NewWriter(w),
		since:      opts.Since,
		timestamps: opts.Timestamps,
	}
	o.flusher, _ = w.(interface{ Flush() })
	if opts.LimitBytes != nil {
		o.limited, o.remain = true, *opts.LimitBytes
	}
	return o
}

// isFull reports whether the byte limit allows no more output.
func (o *output) isFull() bool {
	return o.limited && o.remain <= 0
}

// line writes one logical line; a complete one gets its newline back.
func (o *output) line(l logLine) error {
	if o.skip > 0 {
		o.skip--
		return nil
	}
	if l.time.Before(o.since) {
		return nil
	}
	if err := o.timestamp(l.time); err != nil {
		return err
	}
	if err := o.put(l.text); err != nil {
		return err
	}
	if !l.complete {
		return nil
	}
	return o.put([]byte{'\n'})
}

// timestamp writes the prefix of a line stamped t, if Options.Timestamps.
func (o *output) timestamp(t time.Time) error {
	if !o.timestamps {
		return nil
	}
	o.stamp = t.AppendFormat(o.stamp[:0], timeFormatOut)
	o.stamp = append(o.stamp, ' ')
	return o.put(o.stamp)
}

// put writes b, cut at the byte limit.
//
// NOTE: like the kubelet, limitBytes may end the output mid-line.
func (o *output) put(b []byte) error {
	o.dirty = true
	if o.limited && int64(len(b)) >= o.remain {
		if _, err := o.w.Write(b[:o.remain]); err != nil {
			return err
		}
		o.remain = 0
		return errLimitReached
	}
	if _, err := o.w.Write(b); err != nil {
		return err
	}
	o.remain -= int64(len(b))
	return nil
}

// flush pushes buffered output to the client.
func (o *output) flush() error {
	if !o.dirty {
		return nil
	}
	o.dirty = false
	if err := o.w.Flush(); err != nil {
		return err
	}
	if o.flusher != nil {
		o.flusher.Flush()
	}
	return nil
}
