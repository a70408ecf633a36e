package db

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
)

// Create stores a new object. If Name is empty and GenerateName is set, a
// name is generated (GenerateName + 5 random chars of [bcdfghjklmnpqrstvwxz2456789],
// retrying on collision). It sets UID (unless the caller preset one),
// CreationTimestamp (if zero), Generation=1 (if 0, unless r.NoGeneration) and ResourceVersion on
// obj. ErrAlreadyExists if the name is taken.
func (tx *Tx) Create(r Resource, obj Object) error {
	ns, name := obj.GetNamespace(), obj.GetName()
	if name == "" && obj.GetGenerateName() != "" {
		name = obj.GetGenerateName() // validated below as a stand-in
	}
	if err := checkKey(r, ns, name); err != nil {
		return fmt.Errorf("creating: %w", err)
	}
	b, err := tx.writableBucket(r)
	if err != nil {
		return err
	}
	if obj.GetName() == "" {
		name, err := freeGeneratedName(b, r, ns, obj.GetGenerateName())
		if err != nil {
			return err
		}
		obj.SetName(name)
	} else if b.Get(objectKey(ns, name)) != nil {
		return fmt.Errorf("%s %q: %w", r.Name, describeKey(ns, name), ErrAlreadyExists)
	}
	if obj.GetUID() == "" {
		obj.SetUID(uuid.NewUUID())
	}
	if ts := obj.GetCreationTimestamp(); ts.IsZero() {
		obj.SetCreationTimestamp(now())
	}
	if obj.GetGeneration() == 0 && !r.NoGeneration {
		obj.SetGeneration(1)
	}
	data, err := encodeObject(obj)
	if err != nil {
		return err
	}
	return tx.record(r, b, watch.Added, obj, data)
}

// Update replaces a stored object. If obj's ResourceVersion is non-empty it
// must equal the stored one (else ErrConflict); so must a non-empty UID.
// UID and CreationTimestamp are kept from the stored object, and so are a
// stored DeletionTimestamp and (unless obj sets one) DeletionGracePeriodSeconds.
// ResourceVersion is set to a new value on obj. Generation is the caller's
// business. ErrNotFound if absent.
//
// An update that changes nothing stores nothing: obj gets the stored
// ResourceVersion and no event is sent (as kube-apiserver does).
//
// The finalizer rule: when the updated object has a DeletionTimestamp, no
// Finalizers, and a DeletionGracePeriodSeconds that is nil or 0, Update
// deletes it instead (the event is Deleted, obj gets the deletion's
// ResourceVersion). This is how the last finalizer's removal, or a grace
// period brought to 0, completes a DeleteGracefully.
func (tx *Tx) Update(r Resource, obj Object) error {
	ns, name := obj.GetNamespace(), obj.GetName()
	if err := checkKey(r, ns, name); err != nil {
		return fmt.Errorf("updating: %w", err)
	}
	b := tx.bucket(r)
	if b == nil {
		return notFound(r, ns, name)
	}
	v := b.Get(objectKey(ns, name))
	if v == nil {
		return notFound(r, ns, name)
	}
	storedRV, storedData, err := splitObjectValue(v)
	if err != nil {
		return fmt.Errorf("%s %q: %w", r.Name, describeKey(ns, name), err)
	}
	if rv := obj.GetResourceVersion(); rv != "" && rv != formatRV(storedRV) {
		return fmt.Errorf("%s %q: resourceVersion %s, stored %d: %w",
			r.Name, describeKey(ns, name), rv, storedRV, ErrConflict)
	}
	stored, err := decodeMeta(storedData)
	if err != nil {
		return fmt.Errorf("%s %q: %w", r.Name, describeKey(ns, name), err)
	}
	// NOTE: kube-apiserver refuses an update whose uid differs from the stored
	// object's ("Precondition failed: UID in precondition"), answered as 409.
	if uid := obj.GetUID(); uid != "" && uid != stored.UID {
		return fmt.Errorf("%s %q: uid %s, stored %s: %w",
			r.Name, describeKey(ns, name), uid, stored.UID, ErrConflict)
	}
	keepStoredMeta(obj, stored)
	if isFinalized(r, obj) {
		return tx.remove(r, b, obj)
	}
	data, err := encodeObject(obj)
	if err != nil {
		return err
	}
	if bytes.Equal(data, storedData) {
		obj.SetResourceVersion(formatRV(storedRV))
		return nil
	}
	return tx.record(r, b, watch.Modified, obj, data)
}

// keepStoredMeta copies onto obj what an update cannot change.
// NOTE: kube-apiserver's rest.BeforeUpdate does the same: uid and
// creationTimestamp are kept, a deletionTimestamp can never be removed or
// changed by an update, and deletionGracePeriodSeconds cannot be removed.
func keepStoredMeta(obj Object, stored *metav1.ObjectMeta) {
	obj.SetUID(stored.UID)
	obj.SetCreationTimestamp(stored.CreationTimestamp)
	if stored.DeletionTimestamp != nil {
		obj.SetDeletionTimestamp(stored.DeletionTimestamp)
	}
	if stored.DeletionGracePeriodSeconds != nil && obj.GetDeletionGracePeriodSeconds() == nil {
		obj.SetDeletionGracePeriodSeconds(stored.DeletionGracePeriodSeconds)
	}
}

// isFinalized reports whether obj is marked for deletion with nothing left
// to wait for: no finalizers (nor what r.Finalizing reports) and no grace period.
func isFinalized(r Resource, obj Object) bool {
	grace := obj.GetDeletionGracePeriodSeconds()
	return obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 &&
		(grace == nil || *grace == 0) && (r.Finalizing == nil || !r.Finalizing(obj))
}

// Delete removes the object and returns it, with the ResourceVersion of the
// deletion. ErrNotFound if absent. (Finalizers/deletionTimestamp are policy
// above the store: see DeleteGracefully.)
func (tx *Tx) Delete(r Resource, namespace, name string) (Object, error) {
	obj, err := tx.Get(r, namespace, name)
	if err != nil {
		return nil, err
	}
	if err := tx.remove(r, tx.bucket(r), obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// DeleteGracefully is kube-apiserver's graceful deletion, generic over
// resources: with grace 0 and no finalizers the object is deleted now
// (deleted=true); otherwise metadata.deletionTimestamp is set to now+grace
// and deletionGracePeriodSeconds to grace, and the object stays until its
// finalizers are gone and its grace period is 0 (see Update's finalizer rule).
//
// A second call on an object already being deleted may only shorten the
// grace period; the deletionTimestamp then moves earlier by the difference.
// An object already at grace 0 with no finalizers is deleted. A negative
// grace counts as 1. Callers decide grace (a Pod's terminationGracePeriodSeconds,
// 0 for an unscheduled or finished Pod, 0 for a Job).
func (tx *Tx) DeleteGracefully(r Resource, namespace, name string, grace int64) (Object, bool, error) {
	// NOTE: kube-apiserver's rest.BeforeDelete treats a negative grace period as 1s.
	if grace < 0 {
		grace = 1
	}
	obj, err := tx.Get(r, namespace, name)
	if err != nil {
		return nil, false, err
	}
	changed := markDeleting(obj, grace)
	if isFinalized(r, obj) {
		if err := tx.remove(r, tx.bucket(r), obj); err != nil {
			return nil, false, err
		}
		return obj, true, nil
	}
	if !changed {
		return obj, false, nil
	}
	data, err := encodeObject(obj)
	if err != nil {
		return nil, false, err
	}
	if err := tx.record(r, tx.bucket(r), watch.Modified, obj, data); err != nil {
		return nil, false, err
	}
	return obj, false, nil
}

// markDeleting sets or shortens obj's deletion timestamp and grace period,
// and reports whether it changed anything.
// NOTE: this follows kube-apiserver's rest.BeforeDelete: the first deletion
// sets deletionTimestamp = now + grace (and bumps a set generation when
// graceful); later ones may only lower the grace period, moving the
// timestamp back by the difference.
func markDeleting(obj Object, grace int64) bool {
	ts := obj.GetDeletionTimestamp()
	if ts == nil {
		deadline := metav1.NewTime(now().Add(time.Duration(grace) * time.Second))
		obj.SetDeletionTimestamp(&deadline)
		obj.SetDeletionGracePeriodSeconds(&grace)
		if grace > 0 && obj.GetGeneration() > 0 {
			obj.SetGeneration(obj.GetGeneration() + 1)
		}
		return true
	}
	cur := obj.GetDeletionGracePeriodSeconds()
	if cur == nil || grace >= *cur {
		return false
	}
	deadline := metav1.NewTime(ts.Add(time.Duration(grace-*cur) * time.Second))
	obj.SetDeletionTimestamp(&deadline)
	obj.SetDeletionGracePeriodSeconds(&grace)
	return true
}

// record stores obj (Added or Modified) under a new resourceVersion, logs the
// change and queues its event.
func (tx *Tx) record(r Resource, b *bbolt.Bucket, typ watch.EventType, obj Object, data []byte) error {
	if err := tx.checkWritable(); err != nil {
		return err
	}
	rv := tx.rv + 1
	key := objectKey(obj.GetNamespace(), obj.GetName())
	prev := bytes.Clone(b.Get(key))
	tx.undo = append(tx.undo, undoStep{resource: r.Name, key: key, prev: prev, changeSeq: rv})
	if err := b.Put(key, objectValue(rv, data)); err != nil {
		return fmt.Errorf("storing %s %q: %w", r.Name, describeKey(obj.GetNamespace(), obj.GetName()), err)
	}
	return tx.logChange(r, typ, rv, obj, data, prev)
}

// remove deletes obj under a new resourceVersion, logs the change (with obj
// as it was last) and queues its Deleted event.
func (tx *Tx) remove(r Resource, b *bbolt.Bucket, obj Object) error {
	if err := tx.checkWritable(); err != nil {
		return err
	}
	rv := tx.rv + 1
	key := objectKey(obj.GetNamespace(), obj.GetName())
	prev := bytes.Clone(b.Get(key))
	tx.undo = append(tx.undo, undoStep{resource: r.Name, key: key, prev: prev, changeSeq: rv})
	if err := b.Delete(key); err != nil {
		return fmt.Errorf("deleting %s %q: %w", r.Name, describeKey(obj.GetNamespace(), obj.GetName()), err)
	}
	data, err := encodeObject(obj)
	if err != nil {
		return err
	}
	return tx.logChange(r, watch.Deleted, rv, obj, data, prev)
}

// logChange appends the change at rv to the change log (with prev, the
// object bucket value it replaced, so that reads as of an older
// resourceVersion can undo it), sets rv on obj and queues the event (with a
// copy of obj) for publication after commit.
func (tx *Tx) logChange(r Resource, typ watch.EventType, rv uint64, obj Object, data, prev []byte) error {
	if err := tx.btx.Bucket(bucketChanges).Put(u64(rv), changeValue(typ, r.Name, prev, data)); err != nil {
		return fmt.Errorf("logging change %d: %w", rv, err)
	}
	tx.rv = rv
	obj.SetResourceVersion(formatRV(rv))
	tx.events = append(tx.events, Event{Type: typ, Resource: r.Name, Object: storedCopy(obj), RV: rv})
	return nil
}

// storedCopy is a deep copy of obj as Get would return it (no apiVersion/kind).
func storedCopy(obj Object) Object {
	c := obj.DeepCopyObject().(Object)
	if tm, ok := c.GetObjectKind().(*metav1.TypeMeta); ok {
		*tm = metav1.TypeMeta{}
	}
	return c
}

// decodeMeta decodes only the metadata of stored JSON.
func decodeMeta(data []byte) (*metav1.ObjectMeta, error) {
	var m struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decoding metadata: %w", err)
	}
	return &m.Metadata, nil
}

// now is the current time at the second precision that the JSON form keeps,
// so that an object written and an object read back compare equal.
func now() metav1.Time {
	return metav1.NewTime(time.Now().Truncate(time.Second))
}
