package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// jsonCursor reads the few fields a Table's cells need straight out of an
// object's stored JSON, without reflection: a reader calls fields and each
// on the objects and arrays it walks into and a typed read (str, int32,
// time, …) on the values it keeps; every other value is skipped unread.
// The first error sticks: reads after it return zero values, and err says
// what went wrong.
//
// NOTE: a Table of 10000 Jobs spent half its CPU in encoding/json decoding
// the cells' fields (reflection per value, metav1.Time's UnmarshalJSON),
// after a first pass cutting those fields out of the stored JSON. This
// walks the stored JSON once. It reads JSON as encoding/json writes it (the
// store's encoding): keys are matched exactly, strings without escapes are
// taken as they are, and anything else (an escaped string, a time not in
// metav1.Time's own format) goes to encoding/json or time.Parse, so a value
// decodes as encoding/json decodes it.
type jsonCursor struct {
	data []byte
	i    int
	err  error
	// metadataEnd is where the object's metadata ends in data, once
	// decodeCellMetadata read it (0 before): a Table row copies it.
	metadataEnd int
}

var errBadJSON = errors.New("malformed stored JSON")

// fail records err unless an error is already recorded.
func (c *jsonCursor) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// end reports an error if the JSON read so far is not followed by only
// spaces.
func (c *jsonCursor) end() error {
	if c.err == nil && skipSpace(c.data, c.i) != len(c.data) {
		c.fail(errBadJSON)
	}
	return c.err
}

// null reads a null if one is next.
func (c *jsonCursor) null() bool {
	c.i = skipSpace(c.data, c.i)
	if c.err == nil && bytes.HasPrefix(c.data[c.i:], []byte("null")) {
		c.i += 4
		return true
	}
	return false
}

// open reads the byte b ('{' or '['), after spaces.
func (c *jsonCursor) open(b byte) bool {
	c.i = skipSpace(c.data, c.i)
	if c.err != nil || c.i >= len(c.data) || c.data[c.i] != b {
		c.fail(errBadJSON)
		return false
	}
	c.i = skipSpace(c.data, c.i+1)
	return true
}

// next reads the ',' between two members or the closing byte after the
// last; true if another member follows.
func (c *jsonCursor) next(closing byte) bool {
	c.i = skipSpace(c.data, c.i)
	switch {
	case c.err != nil || c.i >= len(c.data):
		c.fail(errBadJSON)
		return false
	case c.data[c.i] == ',':
		c.i = skipSpace(c.data, c.i+1)
		return true
	case c.data[c.i] == closing:
		c.i++
		return false
	}
	c.fail(errBadJSON)
	return false
}

// skip passes over the next value.
func (c *jsonCursor) skip() {
	c.i = skipSpace(c.data, c.i)
	end, err := skipValue(c.data, c.i)
	if err != nil || c.err != nil {
		c.fail(errBadJSON)
		return
	}
	c.i = end
}

// fields calls fn with the key of each member of the object next (none for
// null), the cursor on the member's value; a value fn leaves unread is
// skipped. The key is the stored bytes between the quotes.
func (c *jsonCursor) fields(fn func(key []byte)) {
	if c.null() || !c.open('{') {
		return
	}
	if c.i < len(c.data) && c.data[c.i] == '}' {
		c.i++
		return
	}
	for {
		end, err := skipValue(c.data, c.i)
		if err != nil || c.data[c.i] != '"' {
			c.fail(errBadJSON)
			return
		}
		key := c.data[c.i+1 : end-1]
		c.i = skipSpace(c.data, end)
		if c.i >= len(c.data) || c.data[c.i] != ':' {
			c.fail(errBadJSON)
			return
		}
		c.i = skipSpace(c.data, c.i+1)
		at := c.i
		fn(key)
		if c.i == at {
			c.skip()
		}
		if !c.next('}') {
			return
		}
	}
}

// each calls fn with the cursor on each value of the array next (none for
// null); a value fn leaves unread is skipped.
func (c *jsonCursor) each(fn func()) {
	if c.null() || !c.open('[') {
		return
	}
	if c.i < len(c.data) && c.data[c.i] == ']' {
		c.i++
		return
	}
	for {
		at := c.i
		fn()
		if c.i == at {
			c.skip()
		}
		if !c.next(']') {
			return
		}
	}
}

// str reads a string ("" for null).
func (c *jsonCursor) str() string {
	if c.null() {
		return ""
	}
	raw, ok := c.rawString()
	if !ok {
		return ""
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		c.fail(err)
	}
	return s
}

// rawString reads a string, quotes and escapes as stored.
func (c *jsonCursor) rawString() ([]byte, bool) {
	if c.err != nil || c.i >= len(c.data) || c.data[c.i] != '"' {
		c.fail(errBadJSON)
		return nil, false
	}
	end, err := skipString(c.data, c.i)
	if err != nil {
		c.fail(err)
		return nil, false
	}
	raw := c.data[c.i:end]
	c.i = end
	return raw, true
}

// strp reads a string into a new pointer (nil for null).
func (c *jsonCursor) strp() *string {
	if c.null() {
		return nil
	}
	s := c.str()
	return &s
}

// boolean reads true or false (false for null).
func (c *jsonCursor) boolean() bool {
	switch {
	case c.null():
		return false
	case c.err == nil && bytes.HasPrefix(c.data[c.i:], []byte("true")):
		c.i += 4
		return true
	case c.err == nil && bytes.HasPrefix(c.data[c.i:], []byte("false")):
		c.i += 5
		return false
	}
	c.fail(errBadJSON)
	return false
}

// boolp reads true or false into a new pointer (nil for null).
func (c *jsonCursor) boolp() *bool {
	if c.null() {
		return nil
	}
	b := c.boolean()
	return &b
}

// int32 reads an integer that fits 32 bits (0 for null).
func (c *jsonCursor) int32() int32 {
	if c.null() || c.err != nil {
		return 0
	}
	end, err := skipValue(c.data, c.i)
	if err != nil {
		c.fail(err)
		return 0
	}
	digits := c.data[c.i:end]
	negative := len(digits) > 0 && digits[0] == '-'
	if negative {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 10 {
		c.fail(errBadJSON)
		return 0
	}
	var n int64
	for _, d := range digits {
		if d < '0' || d > '9' {
			c.fail(errBadJSON)
			return 0
		}
		n = n*10 + int64(d-'0')
	}
	if negative {
		n = -n
	}
	if n != int64(int32(n)) {
		c.fail(errBadJSON)
		return 0
	}
	c.i = end
	return int32(n)
}

// int32p reads an integer into a new pointer (nil for null).
func (c *jsonCursor) int32p() *int32 {
	if c.null() {
		return nil
	}
	n := c.int32()
	return &n
}

// time reads a metav1.Time (zero for null), as its UnmarshalJSON does.
func (c *jsonCursor) time() metav1.Time {
	if c.null() {
		return metav1.Time{}
	}
	raw, ok := c.rawString()
	if !ok {
		return metav1.Time{}
	}
	if t, ok := parseUTCSeconds(raw[1 : len(raw)-1]); ok {
		return metav1.NewTime(t)
	}
	var t metav1.Time
	if err := t.UnmarshalJSON(raw); err != nil {
		c.fail(err)
	}
	return t
}

// timep reads a metav1.Time into a new pointer (nil for null).
func (c *jsonCursor) timep() *metav1.Time {
	if c.null() {
		return nil
	}
	t := c.time()
	return &t
}

// parseUTCSeconds parses metav1.Time's own encoding, RFC 3339 in UTC to the
// second ("2006-01-02T15:04:05Z"); false for anything else, and for dates
// this does not check as time.Parse does (a day past the 28th, a leap
// second), which then go to time.Parse.
func parseUTCSeconds(s []byte) (time.Time, bool) {
	if len(s) != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z' {
		return time.Time{}, false
	}
	num := func(i, n int) int {
		v := 0
		for _, d := range s[i : i+n] {
			if d < '0' || d > '9' {
				return -1
			}
			v = v*10 + int(d-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, second := num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || month < 1 || month > 12 || day < 1 || day > 28 ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59 {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, second, 0, time.UTC), true
}

// strMap reads an object of strings (nil for null).
func (c *jsonCursor) strMap() map[string]string {
	if c.null() {
		return nil
	}
	m := map[string]string{}
	c.fields(func(key []byte) {
		k := string(key)
		if bytes.IndexByte(key, '\\') >= 0 {
			quoted := append(append([]byte{'"'}, key...), '"')
			if err := json.Unmarshal(quoted, &k); err != nil {
				c.fail(err)
			}
		}
		m[k] = c.str()
	})
	return m
}

// strs reads an array of strings (nil for null).
func (c *jsonCursor) strs() []string {
	var out []string
	if c.null() {
		return nil
	}
	out = []string{}
	c.each(func() { out = append(out, c.str()) })
	return out
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
