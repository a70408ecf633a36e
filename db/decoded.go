package db

import "sync"

// maxDecoded bounds the decoded objects a Store keeps: enough for the
// objects being worked on (a Job's active pods, the pods starting), little
// beside a store of tens of thousands.
const maxDecoded = 256

// decodedCache keeps the last decoded copy of recently read objects, so
// that a reader that gets the same object again (a controller's sync on
// every change of a Job's pods) pays a deep copy instead of a JSON
// decode: about a fifth of skiffd's CPU in a Job of short pods went to
// decoding the same pods again. Only committed values are kept: an
// object's key and resourceVersion then name its content for good (a
// value a rolled-back write made may come back with other content under
// the same resourceVersion).
type decodedCache struct {
	mu      sync.Mutex
	entries map[decodedKey]decodedEntry
	order   []decodedKey // insertion order, for eviction; a ring
	next    int
}

type decodedKey struct {
	resource, namespace, name string
}

type decodedEntry struct {
	rv  uint64
	obj Object // never handed out: callers get copies
}

func newDecodedCache() *decodedCache {
	return &decodedCache{entries: make(map[decodedKey]decodedEntry, maxDecoded)}
}

// get returns a copy of the object under k at rv, if kept.
func (c *decodedCache) get(k decodedKey, rv uint64) (Object, bool) {
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if !ok || e.rv != rv {
		return nil, false
	}
	return e.obj.DeepCopyObject().(Object), true
}

// put keeps a copy of obj, decoded from k's value at rv.
func (c *decodedCache) put(k decodedKey, rv uint64, obj Object) {
	kept := obj.DeepCopyObject().(Object)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; !ok {
		if len(c.order) < maxDecoded {
			c.order = append(c.order, k)
		} else {
			delete(c.entries, c.order[c.next])
			c.order[c.next] = k
			c.next = (c.next + 1) % maxDecoded
		}
	}
	c.entries[k] = decodedEntry{rv: rv, obj: kept}
}
