package db

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
)

// Stored is one object as the store holds it, copied out of its
// transaction: its namespace and name, its resourceVersion and its stored
// JSON (without apiVersion, kind and resourceVersion; see the package doc).
// A list that only passes objects on (the API's JSON lists) need not decode
// them: decoding and re-encoding is most of a large list's cost.
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
	out := make([]Stored, 0, len(values))
	for _, kv := range values {
		objRV, data, err := splitObjectValue(kv.value)
		if err != nil {
			return nil, fmt.Errorf("listing %s: key %q: %w", r.Name, kv.key, err)
		}
		ok, err := matchesLabels(data, sel)
		if err != nil {
			return nil, fmt.Errorf("listing %s: key %q: %w", r.Name, kv.key, err)
		}
		if !ok {
			continue
		}
		ns, name, _ := bytes.Cut(kv.key, []byte(keySeparator))
		out = append(out, Stored{Namespace: string(ns), Name: string(name), RV: objRV, JSON: bytes.Clone(data)})
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
	var out []keyValue
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		out = append(out, keyValue{k, v})
	}
	return out
}

// ListStoredAt is Tx.ListStoredAt in its own read transaction; rv 0 lists
// the newest state. It returns the resourceVersion the list is at.
func (s *Store) ListStoredAt(r Resource, namespace string, sel labels.Selector, rv uint64) ([]Stored, uint64, error) {
	var objs []Stored
	err := s.Read(func(tx *Tx) error {
		var err error
		objs, err = tx.ListStoredAt(r, namespace, sel, rv)
		if rv == 0 {
			rv = tx.rv
		}
		return err
	})
	return objs, rv, err
}
