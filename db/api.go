package db

// CONTRACT FILE — the db helper replaces every panic body with the real
// implementation (and may split this file), keeping these signatures.

import (
	"context"
	"errors"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Error classes; callers test them with errors.Is. api maps them to HTTP.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: the object's resourceVersion does not match the stored one.
	ErrConflict = errors.New("conflict")
	// ErrExpired: a watch asked for changes older than the retained change log.
	ErrExpired = errors.New("resource version too old")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("store closed")
)

// Object is what the store keeps: any k8s API object with ObjectMeta.
type Object interface {
	metav1.Object
	runtime.Object
}

// Resource names a stored kind: its plural resource name (the bucket name),
// whether it is namespaced, and how to make an empty value to decode into.
type Resource struct {
	Name       string // "jobs", "pods"
	Namespaced bool
	New        func() Object
}

// The resources skiff stores. Later issues add more (events, namespaces).
var (
	Jobs = Resource{Name: "jobs", Namespaced: true, New: func() Object { return &batchv1.Job{} }}
	Pods = Resource{Name: "pods", Namespaced: true, New: func() Object { return &corev1.Pod{} }}
)

// Store is the bbolt-backed object store. Safe for concurrent use.
type Store struct{}

// Open opens (creating if needed) the bbolt file at path.
func Open(path string) (*Store, error) { panic("contract") }

// Close closes the store; open watchers end.
func (s *Store) Close() error { panic("contract") }

// ResourceVersion is the last committed resourceVersion.
func (s *Store) ResourceVersion() uint64 { panic("contract") }

// Read runs fn in a read-only transaction (a consistent snapshot).
func (s *Store) Read(fn func(tx *Tx) error) error { panic("contract") }

// Write runs fn in one read-write transaction: all of its changes commit
// together (one fsync) or none do; watchers see them only after commit.
func (s *Store) Write(fn func(tx *Tx) error) error { panic("contract") }

// Tx is a transaction. Objects returned are fresh decoded copies, owned by the caller.
type Tx struct{}

// Get returns the object or ErrNotFound.
func (tx *Tx) Get(r Resource, namespace, name string) (Object, error) { panic("contract") }

// List returns objects in namespace ("" = all namespaces) matching sel
// (nil = everything), ordered by namespace then name.
func (tx *Tx) List(r Resource, namespace string, sel labels.Selector) ([]Object, error) {
	panic("contract")
}

// Create stores a new object. If Name is empty and GenerateName is set, a
// name is generated (GenerateName + 5 random chars of [bcdfghjklmnpqrstvwxz2456789],
// retrying on collision). It sets UID, CreationTimestamp, Generation=1 and
// ResourceVersion on obj. ErrAlreadyExists if the name is taken.
func (tx *Tx) Create(r Resource, obj Object) error { panic("contract") }

// Update replaces a stored object. If obj's ResourceVersion is non-empty it
// must equal the stored one (else ErrConflict). UID and CreationTimestamp are
// kept from the stored object; ResourceVersion is set to a new value on obj.
// Generation is the caller's business. ErrNotFound if absent.
func (tx *Tx) Update(r Resource, obj Object) error { panic("contract") }

// Delete removes the object and returns it, with the ResourceVersion of the
// deletion. ErrNotFound if absent. (Finalizers/deletionTimestamp are policy
// above the store: callers Update to set deletionTimestamp, Delete to remove.)
func (tx *Tx) Delete(r Resource, namespace, name string) (Object, error) { panic("contract") }

// DeleteGracefully is kube-apiserver's graceful deletion, generic over
// resources: with grace 0 and no finalizers the object is deleted now
// (deleted=true); otherwise metadata.deletionTimestamp is set (now+grace, kept
// if already set and earlier) and deletionGracePeriodSeconds = grace (never
// raised once set), and the object stays until its finalizers are gone and a
// later Update with grace 0 removes it (see Update).
func (tx *Tx) DeleteGracefully(r Resource, namespace, name string, grace int64) (obj Object, deleted bool, err error) {
	panic("contract")
}

// Get, List, Create, Update, Delete: one-operation transactions.
func (s *Store) Get(r Resource, namespace, name string) (Object, error) { panic("contract") }

// List also returns the resourceVersion of the snapshot it read, for a
// gap-free List-then-Watch.
func (s *Store) List(r Resource, namespace string, sel labels.Selector) ([]Object, uint64, error) {
	panic("contract")
}
func (s *Store) Create(r Resource, obj Object) error { panic("contract") }
func (s *Store) Update(r Resource, obj Object) error { panic("contract") }
func (s *Store) Delete(r Resource, namespace, name string) (Object, error) {
	panic("contract")
}

// Modify reads the object, calls fn on it, and writes it back if fn returns
// nil, in one transaction. fn returning ErrUnchanged skips the write (Modify
// then returns the unchanged object and nil).
func (s *Store) Modify(r Resource, namespace, name string, fn func(obj Object) error) (Object, error) {
	panic("contract")
}

// ErrUnchanged is returned by a Modify callback that decided not to write.
var ErrUnchanged = errors.New("unchanged")

// Event is one committed change.
type Event struct {
	Type     watch.EventType // Added, Modified, Deleted
	Resource string          // Resource.Name
	Object   Object          // state after the change (for Deleted: the last state, with the deletion's resourceVersion)
	RV       uint64
}

// Watcher delivers events in resourceVersion order.
type Watcher struct{}

// Events is closed when the watch ends (ctx done, Stop, store closed, or the
// consumer fell too far behind); Err then says why (nil for ctx/Stop).
func (w *Watcher) Events() <-chan Event { panic("contract") }
func (w *Watcher) Err() error           { panic("contract") }
func (w *Watcher) Stop()                { panic("contract") }

// Watch streams every change to r (all namespaces; callers filter) with
// RV > since. since == 0 means "from now". The change log is persisted in
// bbolt and retained for the last N changes (default 10000, across restarts),
// so a watch can resume after a daemon restart; older since → ErrExpired.
// Delivery never blocks writers: each watcher has its own queue.
func (s *Store) Watch(ctx context.Context, r Resource, since uint64) (*Watcher, error) {
	panic("contract")
}
