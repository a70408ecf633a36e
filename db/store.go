package db

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bucket and key names; doc.go draws the tree.
var (
	bucketMeta    = []byte("meta")
	bucketObjects = []byte("objects")
	bucketChanges = []byte("changes")
	keyRV         = []byte("rv")
	keyCompacted  = []byte("compacted")
)

const (
	defaultChangeLogSize   = 10000
	defaultWatchQueueLimit = 100000
	// openTimeout bounds the wait for bbolt's file lock, so that a second
	// daemon on the same data dir fails instead of hanging.
	openTimeout = 2 * time.Second
)

// Store is the bbolt-backed object store. Safe for concurrent use.
type Store struct {
	db   *bbolt.DB
	opts options

	// writeMu serializes commits, so that their events are published in
	// resourceVersion order: bbolt runs OnCommit handlers after releasing its
	// own writer lock.
	writeMu sync.Mutex
	// queueMu guards queue: the Writes waiting to share the next commit.
	queueMu sync.Mutex
	queue   []*pendingWrite
	closed  atomic.Bool
	rv      atomic.Uint64 // last committed resourceVersion

	// watchMu guards watchers and advanced, and orders rv updates with
	// registrations.
	watchMu  sync.Mutex
	watchers map[*Watcher]struct{}
	// advanced, if not nil, is closed when rv next advances (see WaitFor).
	advanced chan struct{}

	space spaceState // whether the disk took the last write (space.go)

	decoded *decodedCache // recently read objects, decoded (Tx.Get)

	metrics *storeMetrics
}

// Option configures a Store at Open.
type Option func(*options)

type options struct {
	changeLogSize   uint64
	watchQueueLimit int
	metricsReg      prometheus.Registerer // nil = metrics kept unregistered
}

// WithChangeLogSize sets how many of the newest changes the persisted change
// log retains for watch resumption (default 10000). n < 1 is treated as 1.
func WithChangeLogSize(n int) Option {
	return func(o *options) { o.changeLogSize = uint64(max(n, 1)) }
}

// WithWatchQueueLimit sets how many undelivered events a watcher may queue
// before it is ended with ErrTooSlow (default 100000). n < 1 is treated as 1.
func WithWatchQueueLimit(n int) Option {
	return func(o *options) { o.watchQueueLimit = max(n, 1) }
}

// Open opens (creating if needed) the bbolt file at path.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{changeLogSize: defaultChangeLogSize, watchQueueLimit: defaultWatchQueueLimit}
	for _, opt := range opts {
		opt(&o)
	}
	_, statErr := os.Stat(path)
	isNew := errors.Is(statErr, os.ErrNotExist)
	bdb, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: openTimeout})
	if err != nil {
		if isNew {
			// NOTE: a store that could not even be initialized (a full
			// disk) is removed, so that the next start initializes it
			// again instead of finding a torn file.
			_ = os.Remove(path)
		}
		return nil, fmt.Errorf("opening %s: %w", path, mapWriteError(err))
	}
	s := &Store{db: bdb, opts: o, watchers: map[*Watcher]struct{}{}, decoded: newDecodedCache()}
	s.metrics = newStoreMetrics(o.metricsReg, s)
	if err := s.initialize(); err != nil {
		return nil, errors.Join(fmt.Errorf("initializing %s: %w", path, err), bdb.Close())
	}
	return s, nil
}

// initialize creates the top buckets of a new store and loads the last
// resourceVersion. An existing store is only read, so that it opens on a
// full disk.
func (s *Store) initialize() error {
	complete := false
	err := s.db.View(func(btx *bbolt.Tx) error {
		complete = true
		for _, name := range [][]byte{bucketMeta, bucketObjects, bucketChanges} {
			complete = complete && btx.Bucket(name) != nil
		}
		if complete {
			s.rv.Store(readU64(btx.Bucket(bucketMeta).Get(keyRV)))
		}
		return nil
	})
	if err != nil || complete {
		return err
	}
	return mapWriteError(s.db.Update(func(btx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketMeta, bucketObjects, bucketChanges} {
			if _, err := btx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("creating bucket %s: %w", name, err)
			}
		}
		s.rv.Store(readU64(btx.Bucket(bucketMeta).Get(keyRV)))
		return nil
	}))
}

// Close closes the store; open watchers end with ErrClosed. It waits for
// running transactions.
func (s *Store) Close() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.watchMu.Lock()
	for w := range s.watchers {
		delete(s.watchers, w)
		w.end(ErrClosed)
	}
	s.wakeWaiters()
	s.watchMu.Unlock()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("closing store: %w", err)
	}
	return nil
}

// ResourceVersion is the last committed resourceVersion.
func (s *Store) ResourceVersion() uint64 {
	return s.rv.Load()
}

// Read runs fn in a read-only transaction (a consistent snapshot).
func (s *Store) Read(fn func(tx *Tx) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	defer s.metrics.observe("read", time.Now())
	return mapBoltError(s.db.View(func(btx *bbolt.Tx) error {
		return fn(newTx(btx, s.decoded))
	}))
}

// Reconcile is Write for a callback that often finds nothing to change (a
// controller's sync): fn runs first in a read transaction, which neither
// waits for nor holds the single writer. There, any change fn attempts
// fails with ErrReadOnly; fn then runs again in a write transaction, on the
// state as it is then. If fn attempted no change, what it returned is
// returned (its nil or its error), and no write transaction is opened.
//
// fn may therefore run twice: it must start by resetting whatever it
// records outside tx, and must not act outside the store before its last
// change is attempted. The read pass sees a snapshot that a concurrent
// write may have overtaken; a controller that resyncs on every committed
// change (it watches them) decides on such a snapshot safely, as
// Kubernetes' controllers decide on their informers' caches.
func (s *Store) Reconcile(fn func(tx *Tx) error) error {
	attempted := false
	err := s.Read(func(tx *Tx) error {
		err := fn(tx)
		// NOTE: checked whatever fn returned, so that a callback that
		// ignores a write's error still gets its write.
		attempted = tx.changeAttempted
		return err
	})
	if !attempted {
		return err
	}
	return s.Write(fn)
}

// errNothingWritten rolls back a Write whose callback changed nothing.
var errNothingWritten = errors.New("nothing written")

// mapBoltError turns bbolt's "closed" into ErrClosed.
func mapBoltError(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}
