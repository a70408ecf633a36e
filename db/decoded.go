package db

import "sync"

// Bounds of the decoded objects a Store keeps: enough for the objects
// being worked on (a Job's active pods, the pods starting), little beside
// a store of tens of thousands. Sizes are of the stored JSON, which the
// decoded object roughly doubles; a larger object is never kept.
const (
	maxDecoded       = 256
	maxDecodedBytes  = 4 << 20
	maxDecodedObject = 64 << 10
)

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
	order   []decodedKey // first kept first; evicted in that order
	bytes   int          // stored JSON of the entries
}

type decodedKey struct {
	resource, namespace, name string
}

type decodedEntry struct {
	rv   uint64
	size int
	obj  Object // never handed out: callers get copies
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

// put keeps a copy of obj, decoded from size bytes of k's value at rv,
// unless it is too large.
func (c *decodedCache) put(k decodedKey, rv uint64, size int, obj Object) {
	if size > maxDecodedObject {
		return
	}
	kept := obj.DeepCopyObject().(Object)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[k]; ok {
		c.bytes -= old.size
	} else {
		c.order = append(c.order, k)
	}
	c.entries[k] = decodedEntry{rv: rv, size: size, obj: kept}
	c.bytes += size
	for len(c.order) > maxDecoded || c.bytes > maxDecodedBytes {
		oldest := c.order[0]
		c.order = c.order[1:]
		c.bytes -= c.entries[oldest].size
		delete(c.entries, oldest)
	}
}
