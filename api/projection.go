package api

import (
	"bytes"
	"errors"
)

// projection names the parts of a stored JSON object something reads: each
// key a field of the object, its value the fields wanted inside that
// field's object, or inside each object of that field's array (nil: the
// whole value). NOTE: a Table of 10000 Jobs spent
// two thirds of its time decoding whole Jobs for eight cells; decoding
// only the projected fields (a tenth of the bytes) is what makes it fast,
// and encoding/json, given a smaller type, still scans every byte it
// skips, twice.
type projection map[string]projection

var errBadJSON = errors.New("malformed stored JSON")

// project appends to out the JSON object data with only the fields p
// names. data is JSON as the store holds it (encoding/json's output).
func project(out []byte, data []byte, p projection) ([]byte, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, errBadJSON
	}
	out = append(out, '{')
	first := true
	i = skipSpace(data, i+1)
	for i < len(data) && data[i] != '}' {
		keyEnd, err := skipValue(data, i)
		if err != nil {
			return nil, err
		}
		key := data[i:keyEnd]
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return nil, errBadJSON
		}
		start := skipSpace(data, i+1)
		end, err := skipValue(data, start)
		if err != nil {
			return nil, err
		}
		if len(key) >= 2 {
			if inner, wanted := p[string(key[1:len(key)-1])]; wanted {
				if !first {
					out = append(out, ',')
				}
				first = false
				out = append(out, key...)
				out = append(out, ':')
				switch {
				case inner != nil && data[start] == '{':
					out, err = project(out, data[start:end], inner)
				case inner != nil && data[start] == '[':
					out, err = projectEach(out, data[start:end], inner)
				default:
					out = append(out, data[start:end]...)
				}
				if err != nil {
					return nil, err
				}
			}
		}
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	if i >= len(data) {
		return nil, errBadJSON
	}
	return append(out, '}'), nil
}

// projectEach appends the JSON array data with p applied to each of its
// objects (values of other kinds are kept whole).
func projectEach(out []byte, data []byte, p projection) ([]byte, error) {
	out = append(out, '[')
	i := skipSpace(data, 1)
	for n := 0; i < len(data) && data[i] != ']'; n++ {
		end, err := skipValue(data, i)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, ',')
		}
		if data[i] == '{' {
			if out, err = project(out, data[i:end], p); err != nil {
				return nil, err
			}
		} else {
			out = append(out, data[i:end]...)
		}
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	if i >= len(data) {
		return nil, errBadJSON
	}
	return append(out, ']'), nil
}

// skipValue is the index just after the JSON value starting at data[i].
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, errBadJSON
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				end, err := skipString(data, i)
				if err != nil {
					return 0, err
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errBadJSON
	}
	// A number, true, false or null.
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i, nil
		}
		i++
	}
	return i, nil
}

// skipString is the index just after the JSON string starting at data[i].
func skipString(data []byte, i int) (int, error) {
	for i++; i < len(data); {
		// NOTE: IndexByte runs vectorised; strings are most of the bytes.
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			break
		}
		end := i + q
		escapes := 0
		for j := end - 1; j >= i && data[j] == '\\'; j-- {
			escapes++
		}
		if escapes%2 == 0 {
			return end + 1, nil
		}
		i = end + 1
	}
	return 0, errBadJSON
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}
