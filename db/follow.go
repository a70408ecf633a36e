package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
)

// ListWatch lists r in all namespaces, hands the objects to onList and
// returns a watch that continues exactly after the list, so that a consumer
// (a controller's cache) misses no change.
func (s *Store) ListWatch(ctx context.Context, r Resource, onList func([]Object)) (*Watcher, error) {
	objs, rv, err := s.List(r, "", nil)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", r.Name, err)
	}
	if rv == 0 {
		// NOTE: since 0 means "from now" to Watch, an empty store is watched
		// first and listed again, so no change can fall in between (a change
		// may then be seen twice: consumers' handlers are idempotent).
		w, err := s.Watch(ctx, r, 0)
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", r.Name, err)
		}
		if objs, _, err = s.List(r, "", nil); err != nil {
			w.Stop()
			return nil, fmt.Errorf("listing %s: %w", r.Name, err)
		}
		onList(objs)
		return w, nil
	}
	onList(objs)
	w, err := s.Watch(ctx, r, rv)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", r.Name, err)
	}
	return w, nil
}

// Consume hands w's events to onEvent, relisting through ListWatch (onList
// again) when the watch expires or falls behind, until ctx ends (nil) or the
// store closes.
func (s *Store) Consume(ctx context.Context, r Resource, w *Watcher, onList func([]Object), onEvent func(Event)) error {
	for {
		for ev := range w.Events() {
			onEvent(ev)
		}
		err := w.Err()
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrClosed) {
			return fmt.Errorf("watching %s: %w", r.Name, err)
		}
		logrus.WithError(err).WithField("resource", r.Name).Warn("watch ended; relisting")
		for {
			w, err = s.ListWatch(ctx, r, onList)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, ErrExpired) {
				return err
			}
		}
	}
}
