package runtime

import "sync"

// idLocks serialises the lifecycle operations on one container ID within
// this process: Create, Start and Remove of the same instance never
// overlap, and the sweep leaves alone an ID that any of them holds.
type idLocks struct {
	mu   sync.Mutex
	held map[string]*idLock
}

type idLock struct {
	mu   sync.Mutex
	refs int // holders and waiters
}

// lock takes id's lock and returns its release.
func (l *idLocks) lock(id string) (unlock func()) {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[string]*idLock{}
	}
	e := l.held[id]
	if e == nil {
		e = &idLock{}
		l.held[id] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() { l.release(id, e) }
}

// tryLock takes id's lock only if no one holds or waits for it.
func (l *idLocks) tryLock(id string) (unlock func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[string]*idLock{}
	}
	if _, busy := l.held[id]; busy {
		return nil, false
	}
	e := &idLock{refs: 1}
	e.mu.Lock()
	l.held[id] = e
	return func() { l.release(id, e) }, true
}

func (l *idLocks) release(id string, e *idLock) {
	e.mu.Unlock()
	l.mu.Lock()
	e.refs--
	if e.refs == 0 {
		delete(l.held, id)
	}
	l.mu.Unlock()
}
