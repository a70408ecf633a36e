package api

import (
	"sync"
	"weak"
)

// A list copies its objects' stored JSON out of the store's read
// transaction into one buffer (db.ListStoredInto): 24 MB for 10000 Jobs.
// Made anew for each list, that buffer was most of what a list allocated:
// zeroed, faulted in, and a GC cycle (marking the whole heap) every other
// list. The buffer of the last large list is kept for the next one, but
// only weakly: the next GC frees it if no list has taken it by then.
//
// NOTE: what is retained: at most one spare buffer, of minPooledList to
// maxPooledList bytes, and never past the next GC cycle, which does not
// count it as live (a sync.Pool's buffer would be: it raised the heap goal
// and left skiffd 20 to 60 MiB larger after BenchmarkAtRest's lists).
// Lists in progress at once each have their own buffer.
var spareList struct {
	mu  sync.Mutex
	buf weak.Pointer[[]byte]
}

const (
	// minPooledList is the smallest buffer kept: smaller ones cost little
	// to make.
	minPooledList = 1 << 20
	// maxPooledList is the largest buffer kept: a larger list makes its
	// own and leaves it to the GC.
	maxPooledList = 64 << 20
)

// listBuffer is the buffer of one list: the spare one when the list is
// large and it is there and large enough, given back by release.
type listBuffer struct{ pooled *[]byte }

// get is a buffer of capacity n or more for the list's stored JSON (a
// db.ListStoredInto buffer func).
func (l *listBuffer) get(n int) []byte {
	if n < minPooledList || n > maxPooledList {
		return make([]byte, 0, n)
	}
	spareList.mu.Lock()
	p := spareList.buf.Value()
	spareList.buf = weak.Pointer[[]byte]{}
	spareList.mu.Unlock()
	if p == nil || cap(*p) < n {
		// A smaller spare is dropped: this one replaces it.
		b := make([]byte, 0, n)
		p = &b
	}
	l.pooled = p
	return (*p)[:0]
}

// release makes the buffer the spare one: nothing may read the list's
// stored JSON after it.
func (l *listBuffer) release() {
	if l.pooled == nil {
		return
	}
	spareList.mu.Lock()
	spareList.buf = weak.Make(l.pooled)
	spareList.mu.Unlock()
	l.pooled = nil
}
