package db

import "go.etcd.io/bbolt"

// WithMapping runs fn on the address range of the process's mapping of
// the store file's data, and returns the range's length with fn's error.
// bbolt reads through a read-only shared mapping of the whole file; fn
// runs inside a read transaction, which holds that mapping in place (a
// remap, when the file grows, waits for it). The daemon gives it
// memtrim.Range once start-up's lists have read the whole file: resident
// memory otherwise counted it for as long as skiffd ran, though at rest
// it reads little of it.
func (s *Store) WithMapping(fn func(addr, length uintptr) error) (int64, error) {
	var size int64
	err := s.db.View(func(tx *bbolt.Tx) error {
		size = tx.Size()
		return fn(s.db.Info().Data, uintptr(size))
	})
	return size, err
}
