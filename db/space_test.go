package db

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

func TestMapWriteError(t *testing.T) {
	tests := map[string]struct {
		err         error
		wantNoSpace bool
		wantErrno   error
	}{
		"nil":               {err: nil},
		"ENOSPC from write": {err: &fs.PathError{Op: "write", Path: "/d/skiff.db", Err: syscall.ENOSPC}, wantNoSpace: true, wantErrno: syscall.ENOSPC},
		"EDQUOT wrapped":    {err: fmt.Errorf("growing: %w", syscall.EDQUOT), wantNoSpace: true, wantErrno: syscall.EDQUOT},
		"already mapped":    {err: fmt.Errorf("%w: x", ErrNoSpace), wantNoSpace: true},
		"EIO":               {err: &fs.PathError{Op: "write", Path: "/d/skiff.db", Err: syscall.EIO}, wantErrno: syscall.EIO},
		"conflict":          {err: ErrConflict},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := mapWriteError(tc.err)
			if errors.Is(got, ErrNoSpace) != tc.wantNoSpace {
				t.Errorf("mapWriteError(%v) = %v: ErrNoSpace %v, want %v", tc.err, got, !tc.wantNoSpace, tc.wantNoSpace)
			}
			if tc.wantErrno != nil && !errors.Is(got, tc.wantErrno) {
				t.Errorf("mapWriteError(%v) = %v: lost %v", tc.err, got, tc.wantErrno)
			}
			if tc.err != nil && !errors.Is(got, tc.err) {
				t.Errorf("mapWriteError(%v) = %v: does not wrap the original", tc.err, got)
			}
		})
	}
}

// TestWritableFollowsWrites: a write refused for lack of space makes
// Writable fail; a write that commits again clears it.
func TestWritableFollowsWrites(t *testing.T) {
	s, _ := openStore(t)
	if err := s.Writable(); err != nil {
		t.Fatalf("Writable on a fresh store: %v", err)
	}
	full := mapWriteError(&fs.PathError{Op: "write", Path: "skiff.db", Err: syscall.ENOSPC})
	s.space.observe(full)
	if err := s.Writable(); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Writable after a refused write: %v, want ErrNoSpace", err)
	}
	s.space.observe(ErrConflict) // not about space: no change
	mustCreate(t, s, Pods, newPod("ns", "a", nil))
	if err := s.Writable(); err != nil {
		t.Fatalf("Writable after a committed write: %v", err)
	}
}

// TestWritableProbesTheDisk: once marked full, Writable finds by itself
// that the disk takes writes again (here it always did).
func TestWritableProbesTheDisk(t *testing.T) {
	s, _ := openStore(t)
	s.space.observe(fmt.Errorf("%w: test", ErrNoSpace))
	s.space.lastProbe = time.Time{} // due now
	before := txID(t, s)
	if err := s.Writable(); err != nil {
		t.Fatalf("Writable: %v, want the probe to find the disk writable", err)
	}
	if after := txID(t, s); after != before+1 {
		t.Errorf("probe committed txid %d after %d: want one commit", after, before)
	}
}

// TestWriteThatChangesNothingDoesNotCommit: a Write whose callback changes
// nothing costs no commit, so that it also succeeds on a full disk.
func TestWriteThatChangesNothingDoesNotCommit(t *testing.T) {
	s, _ := openStore(t)
	mustCreate(t, s, Pods, newPod("ns", "a", nil))
	before := txID(t, s)
	err := s.Write(func(tx *Tx) error {
		_, err := tx.Get(Pods, "ns", "a")
		return err
	})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	if after := txID(t, s); after != before {
		t.Errorf("txid %d after a write that changed nothing, want %d", after, before)
	}
}

// TestOpenExistingStoreDoesNotWrite: reopening a complete store only reads
// it, so skiffd starts on a full disk.
func TestOpenExistingStoreDoesNotWrite(t *testing.T) {
	s, path := openStore(t)
	mustCreate(t, s, Pods, newPod("ns", "a", nil))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	before := st.ModTime()
	s2, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s2.Close()
	st, err = os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !st.ModTime().Equal(before) {
		t.Errorf("Open modified the store file (mtime %v, was %v)", st.ModTime(), before)
	}
	if s2.ResourceVersion() != 1 {
		t.Errorf("resourceVersion %d after reopen, want 1", s2.ResourceVersion())
	}
}

// txID is the id of the store's last committed transaction.
func txID(t *testing.T, s *Store) int {
	t.Helper()
	var id int
	if err := s.db.View(func(btx *bbolt.Tx) error { id = btx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}
