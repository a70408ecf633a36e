package db

import (
	"bytes"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// Stored is one object as the store holds it, copied out of its
// transaction: its namespace and name, its resourceVersion and its stored
// JSON (without apiVersion, kind and resourceVersion; see the package doc).
// A list that only passes objects on (the API's JSON lists) need not decode
// them: decoding and re-encoding is most of a large list's cost. The items
// of one list share two allocations (ListStoredAt), the buffer of their
// JSON possibly the caller's own (ListStoredInto): what outlives the list
// is copied, not kept.
type Stored struct {
	Namespace, Name string
	RV              uint64
	JSON            []byte
}

// Decode decodes the stored JSON as an r object with its resourceVersion.
func (s Stored) Decode(r Resource) (Object, error) {
	return decodeObject(r, s.RV, s.JSON)
}

// ListStoredAt is ListAt without decoding: the r objects in namespace
// matching sel as of rv (0: the snapshot's own), ordered by namespace then
// name, as stored.
func (tx *Tx) ListStoredAt(r Resource, namespace string, sel labels.Selector, rv uint64) ([]Stored, error) {
	return tx.ListStoredInto(newBuffer, r, namespace, sel, rv)
}

// newBuffer is a new buffer of capacity n.
func newBuffer(n int) []byte { return make([]byte, 0, n) }

// ListStoredInto is ListStoredAt copying the objects' JSON into the buffer
// that buffer(n) returns (length 0, capacity n or more; n is the size of
// all of it): a caller that owns that buffer can reuse it for another list
// once it no longer reads the Stored values. buffer is called inside the
// read transaction: it must not use the store.
func (tx *Tx) ListStoredInto(buffer func(n int) []byte, r Resource, namespace string, sel labels.Selector, rv uint64) ([]Stored, error) {
	var values []keyValue
	switch {
	case rv == 0 || rv == tx.rv:
		values = tx.values(r, namespace)
	case rv > tx.rv:
		return nil, fmt.Errorf("listing %s at resourceVersion %d, newest is %d: %w", r.Name, rv, tx.rv, ErrTooNew)
	default:
		var err error
		if values, err = tx.valuesAt(r, namespace, rv); err != nil {
			return nil, err
		}
	}
	// The matching values are kept in place, at the front of values.
	hits := values[:0]
	keySize, dataSize := 0, 0
	for _, kv := range values {
		_, data, err := splitObjectValue(kv.value)
		if err != nil {
			return nil, fmt.Errorf("listing %s: key %q: %w", r.Name, kv.key, err)
		}
		ok, err := matchesLabels(data, sel)
		if err != nil {
			return nil, fmt.Errorf("listing %s: key %q: %w", r.Name, kv.key, err)
		}
		if ok {
			hits = append(hits, kv)
			keySize += len(kv.key)
			dataSize += len(data)
		}
	}
	// NOTE: the copies out of the transaction are two allocations, not
	// three per object (a list of 10000 Jobs made 30000 for 24 MB): one
	// string of all the keys, one buffer of all the JSON, each object's
	// JSON capped at its end so that appending to one never writes over the
	// next.
	var keys strings.Builder
	keys.Grow(keySize)
	for _, h := range hits {
		keys.Write(h.key)
	}
	allKeys := keys.String()
	buf := buffer(dataSize)[:0]
	if cap(buf) < dataSize {
		buf = newBuffer(dataSize)
	}
	out := make([]Stored, len(hits))
	for i, h := range hits {
		key := allKeys[:len(h.key)]
		allKeys = allKeys[len(h.key):]
		ns, name, _ := strings.Cut(key, keySeparator)
		objRV, data, _ := splitObjectValue(h.value)
		start := len(buf)
		buf = append(buf, data...)
		out[i] = Stored{Namespace: ns, Name: name, RV: objRV, JSON: buf[start:len(buf):len(buf)]}
	}
	return out, nil
}

// values is the object bucket of r in namespace ("" = all), in key order;
// the slices are bbolt's, valid inside the transaction only.
func (tx *Tx) values(r Resource, namespace string) []keyValue {
	b := tx.bucket(r)
	if b == nil {
		return nil
	}
	prefix := namespacePrefix(namespace)
	// NOTE: counted first, the entries fill one allocation: grown by
	// append, the slice of 10000 made 2.4 MB of garbage, and a list's
	// garbage is what sets off a GC cycle marking all of skiffd's heap.
	n := 0
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	out := make([]keyValue, 0, n)
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		out = append(out, keyValue{k, v})
	}
	return out
}

// ListStoredAt is Tx.ListStoredAt in its own read transaction; rv 0 lists
// the newest state. It returns the resourceVersion the list is at.
func (s *Store) ListStoredAt(r Resource, namespace string, sel labels.Selector, rv uint64) ([]Stored, uint64, error) {
	return s.ListStoredInto(newBuffer, r, namespace, sel, rv)
}

// ListStoredInto is Tx.ListStoredInto in its own read transaction; rv 0
// lists the newest state. It returns the resourceVersion the list is at.
func (s *Store) ListStoredInto(buffer func(n int) []byte, r Resource, namespace string, sel labels.Selector, rv uint64) ([]Stored, uint64, error) {
	var objs []Stored
	err := s.Read(func(tx *Tx) error {
		var err error
		objs, err = tx.ListStoredInto(buffer, r, namespace, sel, rv)
		if rv == 0 {
			rv = tx.rv
		}
		return err
	})
	return objs, rv, err
}
