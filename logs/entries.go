package logs

import (
	"bufio"
	"errors"
	"io"
)

// lineReader reads newline-terminated lines from a file that may still be
// growing: a line without its newline yet is kept until the rest arrives.
type lineReader struct {
	br    *bufio.Reader
	carry []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64*1024)}
}

// next returns the next complete line without its newline, or io.EOF when
// none is available yet. The line is valid until the following call.
//
// NOTE: the driver writes each entry with one write(2), so a line without a
// newline is one still being written (or torn by a full disk): it is never
// parsed on its own.
func (lr *lineReader) next() ([]byte, error) {
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if err == nil {
			if len(lr.carry) == 0 {
				return chunk[:len(chunk)-1], nil
			}
			lr.carry = append(lr.carry, chunk...)
			line := lr.carry[:len(lr.carry)-1]
			lr.carry = lr.carry[:0]
			return line, nil
		}
		lr.carry = append(lr.carry, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}
