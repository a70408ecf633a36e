package db

import (
	"bytes"
	"fmt"

	"go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/labels"
)

// Tx is a transaction. Objects returned are fresh decoded copies, owned by
// the caller. A Tx is only valid inside the Read or Write callback that got it.
type Tx struct {
	btx *bbolt.Tx
	// rv is the snapshot's resourceVersion, then (in a write) the last one
	// assigned: by this callback, or by those before it in a shared commit.
	rv uint64
	// committed is the snapshot's resourceVersion: values up to it are
	// committed, those above it belong to the commit under way.
	committed uint64
	decoded   *decodedCache
	events    []Event
	// changeAttempted is set by a change tried in a read transaction.
	changeAttempted bool
	// undo reverses this callback's changes (in a Write), should it fail.
	undo []undoStep
}

func newTx(btx *bbolt.Tx, decoded *decodedCache) *Tx {
	rv := readU64(btx.Bucket(bucketMeta).Get(keyRV))
	return &Tx{btx: btx, rv: rv, committed: rv, decoded: decoded}
}

// ResourceVersion is, in a Read, the resourceVersion of the snapshot (a
// gap-free starting point for Watch); in a Write, the last one assigned so far.
func (tx *Tx) ResourceVersion() uint64 {
	return tx.rv
}

// bucket is r's object bucket, or nil if nothing of r was ever stored.
func (tx *Tx) bucket(r Resource) *bbolt.Bucket {
	return tx.btx.Bucket(bucketObjects).Bucket([]byte(r.Name))
}

// checkWritable fails a change in a read transaction with ErrReadOnly,
// and remembers that one was attempted (see Store.Reconcile).
func (tx *Tx) checkWritable() error {
	if tx.btx.Writable() {
		return nil
	}
	tx.changeAttempted = true
	return ErrReadOnly
}

// writableBucket is r's object bucket, created on first use.
func (tx *Tx) writableBucket(r Resource) (*bbolt.Bucket, error) {
	if err := tx.checkWritable(); err != nil {
		return nil, err
	}
	if b := tx.bucket(r); b != nil {
		return b, nil
	}
	b, err := tx.btx.Bucket(bucketObjects).CreateBucket([]byte(r.Name))
	if err != nil {
		return nil, fmt.Errorf("creating bucket for %s: %w", r.Name, err)
	}
	tx.undo = append(tx.undo, undoStep{resource: r.Name, newBucket: true})
	return b, nil
}

// Get returns the object or ErrNotFound.
func (tx *Tx) Get(r Resource, namespace, name string) (Object, error) {
	if err := checkKey(r, namespace, name); err != nil {
		return nil, err
	}
	b := tx.bucket(r)
	if b == nil {
		return nil, notFound(r, namespace, name)
	}
	v := b.Get(objectKey(namespace, name))
	if v == nil {
		return nil, notFound(r, namespace, name)
	}
	rv, data, err := splitObjectValue(v)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", r.Name, describeKey(namespace, name), err)
	}
	if tx.decoded == nil || rv > tx.committed {
		return decodeObject(r, rv, data)
	}
	k := decodedKey{r.Name, namespace, name}
	if obj, ok := tx.decoded.get(k, rv); ok {
		return obj, nil
	}
	obj, err := decodeObject(r, rv, data)
	if err == nil {
		tx.decoded.put(k, rv, len(data), obj)
	}
	return obj, err
}

// List returns objects in namespace ("" = all namespaces) matching sel
// (nil = everything), ordered by namespace then name. One namespace is a
// prefix seek; a label selector is checked before the full decode.
func (tx *Tx) List(r Resource, namespace string, sel labels.Selector) ([]Object, error) {
	b := tx.bucket(r)
	if b == nil {
		return nil, nil
	}
	prefix := namespacePrefix(namespace)
	var objs []Object
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		rv, data, err := splitObjectValue(v)
		if err != nil {
			return nil, fmt.Errorf("listing %s: key %q: %w", r.Name, k, err)
		}
		ok, err := matchesLabels(data, sel)
		if err != nil {
			return nil, fmt.Errorf("listing %s: key %q: %w", r.Name, k, err)
		}
		if !ok {
			continue
		}
		obj, err := decodeObject(r, rv, data)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", r.Name, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// saveMeta records the last assigned resourceVersion and trims the change
// log to its newest retain entries. Every resourceVersion is one logged
// change, so the log holds exactly (compacted, rv]; trimming deletes the
// oldest keys by number, without a cursor.
func saveMeta(btx *bbolt.Tx, rv, retain uint64) error {
	meta := btx.Bucket(bucketMeta)
	changes := btx.Bucket(bucketChanges)
	compacted := readU64(meta.Get(keyCompacted))
	trimmed := false
	for rv-compacted > retain {
		compacted++
		if err := changes.Delete(u64(compacted)); err != nil {
			return fmt.Errorf("trimming change %d: %w", compacted, err)
		}
		trimmed = true
	}
	if trimmed {
		if err := meta.Put(keyCompacted, u64(compacted)); err != nil {
			return fmt.Errorf("saving compacted resourceVersion: %w", err)
		}
	}
	if err := meta.Put(keyRV, u64(rv)); err != nil {
		return fmt.Errorf("saving resourceVersion: %w", err)
	}
	return nil
}

func notFound(r Resource, namespace, name string) error {
	return fmt.Errorf("%s %q: %w", r.Name, describeKey(namespace, name), ErrNotFound)
}
