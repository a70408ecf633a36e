package events

import (
	"errors"
	"fmt"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// seriesKey identifies repeats of one event: client-go's correlator key
// (source, involved object without its resourceVersion, type, reason,
// message).
type seriesKey struct {
	source corev1.EventSource
	object corev1.ObjectReference
	typ    string
	reason string
	msg    string
}

func keyOf(ev *corev1.Event) seriesKey {
	obj := ev.InvolvedObject
	obj.ResourceVersion = ""
	return seriesKey{source: ev.Source, object: obj, typ: ev.Type, reason: ev.Reason, msg: ev.Message}
}

// series is the stored Event that repeats of a key are counted on.
type series struct {
	namespace, name string
	count           int32
}

// maxSeries bounds the dedupe cache (client-go's is an LRU of 4096).
const maxSeries = 4096

// seriesCache maps an event key to its stored Event.
// NOTE: when full it is emptied rather than kept in LRU order: a repeat
// then starts a new Event, as after a daemon restart.
type seriesCache struct{ m map[seriesKey]series }

func newSeriesCache() *seriesCache { return &seriesCache{m: map[seriesKey]series{}} }

func (c *seriesCache) get(k seriesKey) (series, bool) { s, ok := c.m[k]; return s, ok }

func (c *seriesCache) put(k seriesKey, s series) {
	if _, ok := c.m[k]; !ok && len(c.m) >= maxSeries {
		clear(c.m)
	}
	c.m[k] = s
}

// write stores a batch of new events in one transaction: a repeat of a
// known event raises the stored Event's count and lastTimestamp, anything
// else is created. Events in a namespace that is missing or terminating
// are dropped, as kube-apiserver's NamespaceLifecycle refuses them. A
// batch the full disk refused is returned, to be written again; any other
// failure drops it (events are best effort).
func (b *Broadcaster) write(batch []*corev1.Event) (refused []*corev1.Event) {
	pending := map[seriesKey]series{}
	err := b.cfg.Store.Write(func(tx *db.Tx) error {
		clear(pending)
		for _, ev := range batch {
			ok, err := namespaceOpen(tx, ev.Namespace)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			k := keyOf(ev)
			s, known := pending[k]
			if !known {
				s, known = b.series.get(k)
			}
			if known {
				if s, err = addRepeat(tx, s, ev); err == nil {
					pending[k] = s
					continue
				}
				if !errors.Is(err, db.ErrNotFound) {
					return err
				}
				// The Event expired or was deleted: start a new one.
			}
			if err := tx.Create(db.Events, ev.DeepCopy()); err != nil {
				if errors.Is(err, db.ErrAlreadyExists) {
					logrus.WithField("event", ev.Namespace+"/"+ev.Name).Warn("dropping event: name taken")
					continue
				}
				return err
			}
			pending[k] = series{namespace: ev.Namespace, name: ev.Name, count: 1}
		}
		return nil
	})
	if errors.Is(err, db.ErrNoSpace) {
		logrus.WithError(err).WithField("events", len(batch)).Debug("events wait: the disk is full")
		return batch
	}
	if err != nil {
		logrus.WithError(err).WithField("events", len(batch)).Error("dropping events: writing them failed")
		return nil
	}
	for k, s := range pending {
		b.series.put(k, s)
	}
	return nil
}

// addRepeat counts ev on its series' stored Event.
func addRepeat(tx *db.Tx, s series, ev *corev1.Event) (series, error) {
	obj, err := tx.Get(db.Events, s.namespace, s.name)
	if err != nil {
		return s, err
	}
	stored := obj.(*corev1.Event)
	stored.Count = max(stored.Count, s.count) + 1
	stored.LastTimestamp = ev.LastTimestamp
	if err := tx.Update(db.Events, stored); err != nil {
		return s, fmt.Errorf("counting event %s/%s: %w", s.namespace, s.name, err)
	}
	s.count = stored.Count
	return s, nil
}

// namespaceOpen reports whether events may be created in ns: the
// namespace admission (kube.AdmitNamespace) lets them in.
func namespaceOpen(tx *db.Tx, ns string) (bool, error) {
	namespace, err := db.Find[*corev1.Namespace](tx, db.Namespaces, "", ns)
	if err != nil {
		return false, err
	}
	return kube.AdmitNamespace(namespace, ns, corev1.Resource("events"), "") == nil, nil
}

// sweep deletes the Events last seen more than TTL ago. They are found in
// a read transaction, so that the writers wait only for the deletions.
func (b *Broadcaster) sweep() {
	cutoff := b.cfg.Clock.Now().Add(-b.cfg.TTL)
	var expired []*corev1.Event
	err := b.cfg.Store.Read(func(tx *db.Tx) error {
		list, err := tx.List(db.Events, "", nil)
		for _, obj := range list {
			if ev := obj.(*corev1.Event); lastSeen(ev).Time.Before(cutoff) {
				expired = append(expired, ev)
			}
		}
		return err
	})
	if err == nil && len(expired) > 0 {
		err = b.cfg.Store.Write(func(tx *db.Tx) error {
			for _, ev := range expired {
				_, err := tx.Delete(db.Events, ev.Namespace, ev.Name)
				if err != nil && !errors.Is(err, db.ErrNotFound) {
					return fmt.Errorf("deleting expired event %s/%s: %w", ev.Namespace, ev.Name, err)
				}
			}
			return nil
		})
	}
	if err != nil {
		logrus.WithError(err).Error("deleting expired events")
		return
	}
	if len(expired) > 0 {
		logrus.WithField("events", len(expired)).Debug("expired events deleted")
	}
}

// lastSeen is when ev last happened: the newest of its timestamps (events
// written through events.k8s.io carry eventTime and series instead), else
// its creation.
func lastSeen(ev *corev1.Event) metav1.Time {
	var t metav1.Time
	for _, c := range []metav1.Time{ev.LastTimestamp, ev.FirstTimestamp, metav1.Time(ev.EventTime)} {
		if c.After(t.Time) {
			t = c
		}
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(t.Time) {
		t = metav1.Time(ev.Series.LastObservedTime)
	}
	if t.IsZero() {
		return ev.CreationTimestamp
	}
	return t
}
