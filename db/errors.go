package db

import "errors"

// Error classes; callers test them with errors.Is. api maps them to HTTP.
var (
	// ErrNotFound: no object with that namespace and name.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: Create found the name taken.
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: the object's resourceVersion (or uid) does not match the stored one.
	ErrConflict = errors.New("conflict")
	// ErrExpired: a watch or a read asked for a resourceVersion older than
	// the retained change log.
	ErrExpired = errors.New("resource version too old")
	// ErrTooNew: a read asked for a resourceVersion newer than the store's.
	ErrTooNew = errors.New("resource version too new")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("store closed")
	// ErrTooSlow ends a watch whose consumer fell so far behind that its
	// queue passed the limit (see WithWatchQueueLimit); the consumer should relist.
	ErrTooSlow = errors.New("watcher too slow")
	// ErrReadOnly: a change was attempted in a read transaction (in
	// Store.Reconcile's first pass, the sign that fn must run in a write).
	ErrReadOnly = errors.New("change in a read-only transaction")
	// ErrUnchanged is returned by a Modify callback that decided not to write.
	ErrUnchanged = errors.New("unchanged")
	// ErrNoSpace: the disk holding the store is full (ENOSPC) or its quota
	// is used up (EDQUOT). Nothing of the write was stored; the same write
	// may succeed once space is freed.
	ErrNoSpace = errors.New("no space left on the store's disk")
)
