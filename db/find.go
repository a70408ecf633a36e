package db

import (
	"errors"
	"fmt"
)

// Find is Tx.Get typed for the caller: the object as T, or the zero T
// (nil) and no error when it does not exist.
func Find[T Object](tx *Tx, r Resource, namespace, name string) (T, error) {
	var zero T
	obj, err := tx.Get(r, namespace, name)
	if errors.Is(err, ErrNotFound) {
		return zero, nil
	}
	if err != nil {
		return zero, err
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("%s %s/%s: unexpected %T", r.Name, namespace, name, obj)
	}
	return t, nil
}
