package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"go.etcd.io/bbolt"
)

// Backup writes a consistent copy of the whole store to w while writes go
// on: one read transaction's view of the file (bbolt's Tx.WriteTo), a valid
// bbolt file that Open takes as it is. begin, if not nil, is told the
// copy's size and the resourceVersion it holds before anything is written.
// Writing stops with ctx's error when ctx ends.
//
// NOTE: while the copy is written, a write that needs the file to grow
// waits for it (bbolt remaps the file only without readers), so a slow w
// slows writers down: give it a fast sink.
func (s *Store) Backup(ctx context.Context, w io.Writer, begin func(size int64, resourceVersion uint64)) error {
	if s.closed.Load() {
		return ErrClosed
	}
	return s.db.View(func(btx *bbolt.Tx) error {
		if begin != nil {
			begin(btx.Size(), readU64(btx.Bucket(bucketMeta).Get(keyRV)))
		}
		if _, err := btx.WriteTo(ctxWriter{ctx: ctx, w: w}); err != nil {
			if ctx.Err() != nil {
				err = ctx.Err() // bbolt does not wrap its writer's error
			}
			return fmt.Errorf("writing backup: %w", err)
		}
		return nil
	})
}

// CheckBackup opens the bbolt file at path read-only, checks that its pages
// are consistent and that it is a store, and returns the resourceVersion
// it holds: to verify a backup before trusting it.
func CheckBackup(path string) (resourceVersion uint64, err error) {
	bdb, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: openTimeout})
	if err != nil {
		return 0, fmt.Errorf("opening %s: %w", path, err)
	}
	defer bdb.Close()
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	err = bdb.View(func(btx *bbolt.Tx) error {
		// NOTE: a torn copy names pages past its end, which the mapping
		// would fault on (SIGBUS): compare before reading any page.
		if btx.Size() > info.Size() {
			return fmt.Errorf("%s is cut short: %d bytes of %d", path, info.Size(), btx.Size())
		}
		var errs []error
		for err := range btx.Check() { // drained whole: it reads the tx's pages
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("checking %s: %w", path, errors.Join(errs...))
		}
		for _, name := range [][]byte{bucketMeta, bucketObjects, bucketChanges} {
			if btx.Bucket(name) == nil {
				return fmt.Errorf("%s is no skiff store: no %s bucket", path, name)
			}
		}
		resourceVersion = readU64(btx.Bucket(bucketMeta).Get(keyRV))
		return nil
	})
	return resourceVersion, err
}

// ctxWriter fails its writes once ctx ends.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
