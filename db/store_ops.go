package db

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
)

// Get returns the object or ErrNotFound, in its own read transaction.
func (s *Store) Get(r Resource, namespace, name string) (Object, error) {
	var obj Object
	err := s.Read(func(tx *Tx) error {
		var err error
		obj, err = tx.Get(r, namespace, name)
		return err
	})
	return obj, err
}

// List is Tx.List in its own read transaction. It also returns the
// resourceVersion of the snapshot it read, for a gap-free List-then-Watch.
func (s *Store) List(r Resource, namespace string, sel labels.Selector) ([]Object, uint64, error) {
	var (
		objs []Object
		rv   uint64
	)
	err := s.Read(func(tx *Tx) error {
		var err error
		objs, err = tx.List(r, namespace, sel)
		rv = tx.rv
		return err
	})
	return objs, rv, err
}

// Create is Tx.Create in its own write transaction.
func (s *Store) Create(r Resource, obj Object) error {
	return s.Write(func(tx *Tx) error { return tx.Create(r, obj) })
}

// Update is Tx.Update in its own write transaction.
func (s *Store) Update(r Resource, obj Object) error {
	return s.Write(func(tx *Tx) error { return tx.Update(r, obj) })
}

// Delete is Tx.Delete in its own write transaction.
func (s *Store) Delete(r Resource, namespace, name string) (Object, error) {
	var obj Object
	err := s.Write(func(tx *Tx) error {
		var err error
		obj, err = tx.Delete(r, namespace, name)
		return err
	})
	return obj, err
}

// DeleteGracefully is Tx.DeleteGracefully in its own write transaction.
func (s *Store) DeleteGracefully(r Resource, namespace, name string, grace int64) (Object, bool, error) {
	var (
		obj     Object
		deleted bool
	)
	err := s.Write(func(tx *Tx) error {
		var err error
		obj, deleted, err = tx.DeleteGracefully(r, namespace, name, grace)
		return err
	})
	return obj, deleted, err
}

// Modify reads the object, calls fn on it, and writes it back (Tx.Update,
// including its finalizer rule) if fn returns nil, in one transaction. fn
// returning ErrUnchanged skips the write: Modify then returns the stored
// object and nil. fn must not change the object's namespace or name.
func (s *Store) Modify(r Resource, namespace, name string, fn func(obj Object) error) (Object, error) {
	var out Object
	err := s.Write(func(tx *Tx) error {
		obj, err := tx.Get(r, namespace, name)
		if err != nil {
			return err
		}
		err = fn(obj)
		if errors.Is(err, ErrUnchanged) {
			// NOTE: fn may have changed obj before deciding; return what is stored.
			out, err = tx.Get(r, namespace, name)
			return err
		}
		if err != nil {
			return err
		}
		if obj.GetNamespace() != namespace || obj.GetName() != name {
			return fmt.Errorf("modifying %s %q: callback renamed it to %q", r.Name,
				describeKey(namespace, name), describeKey(obj.GetNamespace(), obj.GetName()))
		}
		if err := tx.Update(r, obj); err != nil {
			return err
		}
		out = obj
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
