package db

import (
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
)

// pendingWrite is one Write waiting for its commit. Its fields are set by
// the Write that commits it, under Store.writeMu.
type pendingWrite struct {
	fn       func(tx *Tx) error
	err      error
	panicked any  // what fn panicked with, to panic again in its caller
	wrote    bool // fn changed something, kept in the commit
	done     bool
}

// Write runs fn in a read-write transaction: all of its changes commit
// together (one fsync) or none do; watchers see them only after commit.
// Objects passed to a failed Write may have been changed (uid, name,
// resourceVersion) although nothing was stored.
//
// Concurrent Writes share commits (group commit): the Writes that arrive
// while a commit is being written wait for it, then the first of them
// runs all their callbacks in turn, in one bbolt transaction written with
// one fsync. Each callback sees the changes of those before it, as if
// they had committed; a callback that fails (or panics, or changes
// nothing) has its own changes undone before the next runs. So each Write
// still commits all or nothing, each callback runs once, and a Write
// returns only once its changes are on the disk.
//
// A callback must not wait for what another goroutine holds while it
// calls Write (a lock, a channel it will serve afterwards): that Write may
// be ahead of it in the same commit. With one writer at a time such a wait
// could already deadlock (the other Write waiting for the writer that runs
// this callback): the rule is not new.
func (s *Store) Write(fn func(tx *Tx) error) error {
	defer s.metrics.observe("write", time.Now())
	w := &pendingWrite{fn: fn}
	s.queueMu.Lock()
	s.queue = append(s.queue, w)
	s.queueMu.Unlock()
	s.lead(w)
	if w.panicked != nil {
		panic(w.panicked)
	}
	return w.err
}

// lead commits the queued writes, w among them, unless an earlier Write
// took w into its commit meanwhile.
func (s *Store) lead(w *pendingWrite) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if w.done {
		return
	}
	s.queueMu.Lock()
	batch := s.queue
	s.queue = nil
	s.queueMu.Unlock()
	s.commit(batch)
}

// errCommitAborted fails the writes of a commit cut short by a panic
// outside their callbacks (which panics on in the committing Write).
var errCommitAborted = errors.New("store commit aborted")

// commit runs batch's callbacks in one write transaction and commits what
// they changed; it sets every pending write's outcome. Called under writeMu.
func (s *Store) commit(batch []*pendingWrite) {
	finished := false
	defer func() {
		for _, w := range batch {
			if !finished && w.err == nil && w.panicked == nil {
				w.err = errCommitAborted
			}
			w.done = true
		}
	}()
	if s.closed.Load() {
		for _, w := range batch {
			w.err = ErrClosed
		}
		return
	}
	err := s.db.Update(func(btx *bbolt.Tx) error {
		committed := readU64(btx.Bucket(bucketMeta).Get(keyRV))
		rv := committed
		var events []Event
		for i, w := range batch {
			tx := &Tx{btx: btx, rv: rv, committed: committed, decoded: s.decoded}
			w.err, w.panicked = run(tx, w.fn)
			if w.err != nil || w.panicked != nil || len(tx.events) == 0 {
				// NOTE: every change goes through Tx's methods, which queue
				// an event: with none, nothing changed but perhaps a bucket
				// made on the way.
				if err := tx.undoChanges(); err != nil {
					// The transaction is rolled back whole: the writes
					// before this one fail with it, those after never ran.
					err = fmt.Errorf("undoing a failed write: %w", err)
					for _, later := range batch[i+1:] {
						later.err = err
					}
					return err
				}
				continue
			}
			w.wrote = true
			rv = tx.rv
			events = append(events, tx.events...)
		}
		if len(events) == 0 {
			// Rolling back spares the commit (a page and an fsync), so
			// that writes that change nothing also work on a full disk.
			return errNothingWritten
		}
		if err := saveMeta(btx, rv, s.opts.changeLogSize); err != nil {
			return err
		}
		commitStart := time.Now()
		btx.OnCommit(func() {
			s.metrics.commits.Observe(time.Since(commitStart).Seconds())
			s.publish(rv, events)
		})
		return nil
	})
	if errors.Is(err, errNothingWritten) {
		err = nil
	} else {
		err = mapBoltError(mapWriteError(err))
		s.space.observe(err)
	}
	for _, w := range batch {
		switch {
		case w.wrote:
			w.err = err
		case w.err != nil:
			w.err = mapBoltError(mapWriteError(w.err))
		}
	}
	finished = true
}

// run calls fn, catching a panic so that the rest of a shared commit
// goes on; Write panics again in fn's caller.
func run(tx *Tx, fn func(tx *Tx) error) (err error, panicked any) {
	defer func() {
		if p := recover(); p != nil {
			panicked = p
		}
	}()
	return fn(tx), nil
}

// undoStep reverses one change of a write transaction's callback.
type undoStep struct {
	resource  string
	newBucket bool   // the change created the resource's bucket
	key       []byte // else the object's key,
	prev      []byte // the value it had (nil: absent),
	changeSeq uint64 // and the change log entry it made
}

// undoChanges reverses tx's changes, newest first, leaving the
// transaction as it was before tx's callback ran.
func (tx *Tx) undoChanges() error {
	objects := tx.btx.Bucket(bucketObjects)
	for i := len(tx.undo) - 1; i >= 0; i-- {
		u := tx.undo[i]
		if u.newBucket {
			if err := objects.DeleteBucket([]byte(u.resource)); err != nil {
				return fmt.Errorf("removing bucket %s: %w", u.resource, err)
			}
			continue
		}
		b := objects.Bucket([]byte(u.resource))
		var err error
		if u.prev == nil {
			err = b.Delete(u.key)
		} else {
			err = b.Put(u.key, u.prev)
		}
		if err == nil {
			err = tx.btx.Bucket(bucketChanges).Delete(u64(u.changeSeq))
		}
		if err != nil {
			return fmt.Errorf("restoring %s %q: %w", u.resource, u.key, err)
		}
	}
	tx.undo, tx.events = nil, nil
	return nil
}
