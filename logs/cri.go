package logs

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// stream is the container output an entry came from.
type stream int

const (
	stdout stream = iota
	stderr
	numStreams
)

// String is the stream's name in the CRI log format.
func (s stream) String() string {
	if s == stderr {
		return "stderr"
	}
	return "stdout"
}

const (
	// timeFormatIn is the timestamp written by the driver and accepted when
	// parsing (time.Parse takes any number of fractional digits).
	timeFormatIn = time.RFC3339Nano
	// timeFormatOut is the timestamp prefix printed with Options.Timestamps.
	//
	// NOTE: the kubelet prints RFC3339Nano with a fixed nine-digit fraction
	// (types.RFC3339NanoFixed) so that timestamped lines align.
	timeFormatOut = "2006-01-02T15:04:05.000000000Z07:00"

	tagPartial = "P"
	tagFull    = "F"
)

// errMalformed marks a line that is not in the CRI log format.
var errMalformed = errors.New("malformed CRI log line")

// entry is one line of a CRI log file:
// `<RFC3339Nano timestamp> <stdout|stderr> <P|F> <text>`.
type entry struct {
	time    time.Time
	stream  stream
	partial bool
	text    []byte // aliases the parsed line
}

// appendEntry appends the CRI log line for one entry, newline included.
func appendEntry(b []byte, t time.Time, s stream, partial bool, text []byte) []byte {
	b = t.AppendFormat(b, timeFormatIn)
	b = append(b, ' ')
	b = append(b, s.String()...)
	if partial {
		b = append(b, " "+tagPartial+" "...)
	} else {
		b = append(b, " "+tagFull+" "...)
	}
	b = append(b, text...)
	return append(b, '\n')
}

// parseEntry parses one CRI log line (without its newline). The entry's text
// aliases line.
func parseEntry(line []byte) (entry, error) {
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return entry{}, fmt.Errorf("%w: no timestamp", errMalformed)
	}
	t, err := time.Parse(timeFormatIn, string(ts))
	if err != nil {
		return entry{}, fmt.Errorf("%w: %w", errMalformed, err)
	}
	s, partial, text, err := parseHeaderRest(rest)
	if err != nil {
		return entry{}, err
	}
	return entry{time: t, stream: s, partial: partial, text: text}, nil
}

// parseHeader parses only the stream and tag of a line's beginning, for
// scanning a file without decoding timestamps.
func parseHeader(line []byte) (s stream, partial bool, err error) {
	_, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return 0, false, fmt.Errorf("%w: no timestamp", errMalformed)
	}
	s, partial, _, err = parseHeaderRest(rest)
	return s, partial, err
}

// parseHeaderRest parses `<stream> <tag> <text>`.
func parseHeaderRest(rest []byte) (s stream, partial bool, text []byte, err error) {
	name, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return 0, false, nil, fmt.Errorf("%w: no stream", errMalformed)
	}
	switch string(name) {
	case "stdout":
		s = stdout
	case "stderr":
		s = stderr
	default:
		return 0, false, nil, fmt.Errorf("%w: unknown stream %q", errMalformed, name)
	}
	tags, text, ok := bytes.Cut(rest, []byte{' '})
	if !ok && len(tags) == 0 {
		return 0, false, nil, fmt.Errorf("%w: no tag", errMalformed)
	}
	// NOTE: the tag field may carry several ':'-separated tags; like the
	// kubelet, only the first one (P or F) matters.
	first, _, _ := bytes.Cut(tags, []byte{':'})
	return s, string(first) == tagPartial, text, nil
}
