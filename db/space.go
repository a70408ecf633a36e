package db

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
)

// mapWriteError marks a write that failed for lack of disk space (ENOSPC,
// or EDQUOT for a quota) with ErrNoSpace. bbolt rolls such a commit back
// whole: the store stays as it was before the write.
func mapWriteError(err error) error {
	if err == nil || errors.Is(err, ErrNoSpace) {
		return err
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return err
}

// probeInterval is the least time between two probes of a full disk.
const probeInterval = time.Second

// spaceState remembers whether the store's disk took the last write. A
// write refused for lack of space marks the disk full until a later write,
// or a probe, commits again.
type spaceState struct {
	mu        sync.Mutex
	full      error     // the last ErrNoSpace, nil while writes commit
	lastProbe time.Time // of the last probe while full
}

// observe records the outcome of a write.
func (st *spaceState) observe(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case err == nil:
		st.full = nil
	case errors.Is(err, ErrNoSpace):
		// A refused write tells as much as a probe would.
		st.full, st.lastProbe = err, time.Now()
	}
}

// Writable reports whether the store's disk takes writes: nil, or an
// ErrNoSpace error while the last write was refused for lack of space.
// While the disk is full it probes at most once per second with an empty
// commit (a freelist page, the meta page and an fsync: the least any
// write needs), so that it turns nil once space is freed even if nothing
// else writes.
func (s *Store) Writable() error {
	st := &s.space
	st.mu.Lock()
	full := st.full
	due := full != nil && time.Since(st.lastProbe) >= probeInterval
	if due {
		st.lastProbe = time.Now()
	}
	st.mu.Unlock()
	if !due {
		return full
	}
	err := s.probe()
	if err != nil && !errors.Is(err, ErrNoSpace) {
		return err
	}
	st.observe(err)
	return err
}

// probe commits an empty write transaction.
func (s *Store) probe() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.closed.Load() {
		return ErrClosed
	}
	// NOTE: bbolt commits a writable transaction even when it changed
	// nothing: it writes a new freelist page and the meta page.
	return mapBoltError(mapWriteError(s.db.Update(func(*bbolt.Tx) error { return nil })))
}
