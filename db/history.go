package db

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
)

// Reads as of an older resourceVersion. Every logged change keeps the
// object bucket value it replaced, so the state at rv is the current state
// with every change after rv undone: this works for any rv the change log
// still covers (rv ≥ compacted), like etcd's reads at a revision not yet
// compacted.

// Compacted is the newest resourceVersion trimmed from the change log:
// reads and watches from an older one fail with ErrExpired.
func (tx *Tx) Compacted() uint64 {
	return readU64(tx.btx.Bucket(bucketMeta).Get(keyCompacted))
}

// ListAt is List as of resourceVersion rv: the objects that existed then,
// as they were then (each with its resourceVersion of that time), ordered
// by namespace then name. rv 0 or the snapshot's own resourceVersion is
// List. ErrExpired if the change log no longer reaches back to rv,
// ErrTooNew if rv is newer than the snapshot.
func (tx *Tx) ListAt(r Resource, namespace string, sel labels.Selector, rv uint64) ([]Object, error) {
	if rv == 0 || rv == tx.rv {
		return tx.List(r, namespace, sel)
	}
	stored, err := tx.ListStoredAt(r, namespace, sel, rv)
	if err != nil {
		return nil, err
	}
	objs := make([]Object, 0, len(stored))
	for _, st := range stored {
		obj, err := st.Decode(r)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", r.Name, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// keyValue is an object bucket entry.
type keyValue struct{ key, value []byte }

// valuesAt is the object bucket of r in namespace as it was at rv, in key order.
func (tx *Tx) valuesAt(r Resource, namespace string, rv uint64) ([]keyValue, error) {
	undo, err := tx.undoAfter(r, namespace, rv)
	if err != nil {
		return nil, err
	}
	var out []keyValue
	if b := tx.bucket(r); b != nil {
		prefix := namespacePrefix(namespace)
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if prev, ok := undo[string(k)]; ok {
				delete(undo, string(k))
				v = prev
			}
			if v != nil {
				out = append(out, keyValue{k, v})
			}
		}
	}
	// What is left was deleted after rv.
	for k, prev := range undo {
		if prev != nil {
			out = append(out, keyValue{[]byte(k), prev})
		}
	}
	slices.SortFunc(out, func(a, b keyValue) int { return bytes.Compare(a.key, b.key) })
	return out, nil
}

// undoAfter maps the key of every r object in namespace ("" = all) changed
// after rv to its object bucket value at rv (nil: it did not exist then).
func (tx *Tx) undoAfter(r Resource, namespace string, rv uint64) (map[string][]byte, error) {
	if compacted := tx.Compacted(); rv < compacted {
		return nil, fmt.Errorf("reading %s at resourceVersion %d, oldest retained is %d: %w", r.Name, rv, compacted, ErrExpired)
	}
	undo := map[string][]byte{}
	c := tx.btx.Bucket(bucketChanges).Cursor()
	for k, v := c.Seek(u64(rv + 1)); k != nil; k, v = c.Next() {
		ch, err := splitChangeValue(v)
		if err != nil {
			return nil, fmt.Errorf("reading change %d: %w", readU64(k), err)
		}
		if ch.resource != r.Name {
			continue
		}
		h, err := decodeHead(ch.data)
		if err != nil {
			return nil, fmt.Errorf("reading change %d: %w", readU64(k), err)
		}
		if namespace != "" && h.Namespace != namespace {
			continue
		}
		key := string(objectKey(h.Namespace, h.Name))
		if _, seen := undo[key]; seen {
			continue
		}
		if !ch.prevKnown {
			return nil, fmt.Errorf("reading %s at resourceVersion %d: change %d predates history: %w",
				r.Name, rv, readU64(k), ErrExpired)
		}
		undo[key] = ch.prev
	}
	return undo, nil
}

// ListAt is Tx.ListAt in its own read transaction; rv 0 lists the newest
// state. It returns the resourceVersion the list is at.
func (s *Store) ListAt(r Resource, namespace string, sel labels.Selector, rv uint64) ([]Object, uint64, error) {
	var objs []Object
	err := s.Read(func(tx *Tx) error {
		var err error
		objs, err = tx.ListAt(r, namespace, sel, rv)
		if rv == 0 {
			rv = tx.rv
		}
		return err
	})
	return objs, rv, err
}

// Compacted is Tx.Compacted in its own read transaction.
func (s *Store) Compacted() (uint64, error) {
	var c uint64
	err := s.Read(func(tx *Tx) error {
		c = tx.Compacted()
		return nil
	})
	return c, err
}

// WaitFor blocks until resourceVersion rv (or a later one) is committed and
// published, and returns nil; or until ctx ends (its error) or the store
// closes (ErrClosed).
func (s *Store) WaitFor(ctx context.Context, rv uint64) error {
	for {
		s.watchMu.Lock()
		if s.closed.Load() {
			s.watchMu.Unlock()
			return ErrClosed
		}
		if s.rv.Load() >= rv {
			s.watchMu.Unlock()
			return nil
		}
		if s.advanced == nil {
			s.advanced = make(chan struct{})
		}
		advanced := s.advanced
		s.watchMu.Unlock()
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// wakeWaiters releases WaitFor callers to look again; watchMu must be held.
func (s *Store) wakeWaiters() {
	if s.advanced != nil {
		close(s.advanced)
		s.advanced = nil
	}
}
