package db

import (
	"go.etcd.io/bbolt"

	"github.com/skiff-sh/skiff/internal/memtrim"
)

// DropMapping gives up the process's mappings of the store file's pages
// (memtrim.Range) and returns the size of the file's data they covered.
// bbolt reads through a read-only shared mapping of the whole file, so
// once a start's first lists have read every object, resident memory
// counts the whole file for as long as the daemon runs, though at rest it
// reads little of it. The pages stay in the page cache; reads map back
// what they touch.
func (s *Store) DropMapping() (int64, error) {
	var size int64
	err := s.db.View(func(tx *bbolt.Tx) error {
		// NOTE: a read transaction holds bbolt's mapping in place: a remap
		// (the file growing) waits for it to end.
		size = tx.Size()
		return memtrim.Range(s.db.Info().Data, uintptr(size))
	})
	return size, err
}
