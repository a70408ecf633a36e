package api

import "sync"

// A list copies its objects' stored JSON out of the store's read
// transaction into one buffer (db.ListStoredInto): 24 MB for 10000 Jobs.
// Made anew for each list, that buffer was most of what a list allocated:
// zeroed, faulted in, and a GC cycle (marking the whole heap) every other
// list. listBuffers keeps the buffers of large lists for the next ones.
//
// NOTE: what the pool may hold: only buffers of minPooledList to
// maxPooledList bytes, at most one for each large list that was in
// progress at once (a list takes its buffer out of the pool and gives it
// back when its response is written), and none for longer than two GC
// cycles without a large list taking it (sync.Pool drops what stays
// unused through two collections; the runtime collects at least every two
// minutes, so an idle skiffd frees it within about four).
var listBuffers sync.Pool // of *[]byte

const (
	// minPooledList is the smallest buffer pooled: smaller ones cost
	// little to make.
	minPooledList = 1 << 20
	// maxPooledList is the largest buffer pooled: a larger list makes
	// its own, and leaves it to the GC.
	maxPooledList = 64 << 20
)

// listBuffer is the buffer of one list: taken from listBuffers when the
// list is large, given back by release.
type listBuffer struct{ pooled *[]byte }

// get is a buffer of capacity n or more for the list's stored JSON (a
// db.ListStoredInto buffer func).
func (l *listBuffer) get(n int) []byte {
	if n < minPooledList || n > maxPooledList {
		return make([]byte, 0, n)
	}
	p, _ := listBuffers.Get().(*[]byte)
	if p == nil || cap(*p) < n {
		// A smaller pooled buffer is dropped: this one replaces it.
		b := make([]byte, 0, n)
		p = &b
	}
	l.pooled = p
	return (*p)[:0]
}

// release gives the buffer back to listBuffers: nothing may read the
// list's stored JSON after it.
func (l *listBuffer) release() {
	if l.pooled != nil {
		listBuffers.Put(l.pooled)
		l.pooled = nil
	}
}
