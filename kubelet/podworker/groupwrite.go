package podworker

import (
	"errors"
	"sync"

	"github.com/skiff-sh/skiff/db"
)

// groupWriter commits the pod workers' status writes together: writes that
// arrive while another one is committing wait for it, then go in one store
// transaction (one fsync) instead of one each. A write that finds nothing
// committing goes at once, so a lone pod waits for nothing more than before.
// Every caller returns only once its own write is committed (or refused),
// as with Store.Modify: nothing is acted on before it is on disk.
type groupWriter struct {
	// write is Store.Write.
	write func(fn func(tx *db.Tx) error) error

	mu      sync.Mutex
	pending []*groupedWrite
	busy    bool // a leader is committing; the next arrivals wait for it
}

// groupedWrite is one Store.Modify waiting for its group's commit.
type groupedWrite struct {
	r         db.Resource
	ns, name  string
	fn        func(db.Object) error
	out       db.Object
	err       error
	committed chan struct{} // closed once out and err are final, or leads is set
	leads     bool          // this write's caller commits the next group
}

// errGroupAborted marks a write refused inside a group for a reason that
// is not its own (the transaction failed); it is tried again alone.
var errGroupAborted = errors.New("group write aborted")

// modify is Store.Modify, committed with the writes that queue up beside it.
// fn may run more than once (a group whose transaction failed is tried
// again write by write), each time on the object as then stored.
func (g *groupWriter) modify(r db.Resource, namespace, name string, fn func(db.Object) error) (db.Object, error) {
	me := &groupedWrite{r: r, ns: namespace, name: name, fn: fn, committed: make(chan struct{})}
	g.mu.Lock()
	g.pending = append(g.pending, me)
	lead := !g.busy
	g.busy = true
	g.mu.Unlock()
	if !lead {
		<-me.committed
		if !me.leads {
			return me.out, me.err
		}
	}
	g.mu.Lock()
	group := g.pending
	g.pending = nil
	g.mu.Unlock()

	g.commit(group)

	g.mu.Lock()
	if len(g.pending) > 0 {
		next := g.pending[0]
		next.leads = true
		close(next.committed)
	} else {
		g.busy = false
	}
	g.mu.Unlock()
	for _, w := range group {
		if w != me {
			close(w.committed)
		}
	}
	return me.out, me.err
}

// commit runs the group's writes in one transaction. A write that refuses
// itself (the object gone, its callback's error) leaves the others alone;
// if the transaction fails as a whole, each write is tried again on its
// own, so that one write's failure is never another's.
func (g *groupWriter) commit(group []*groupedWrite) {
	err := g.write(func(tx *db.Tx) error {
		for _, w := range group {
			if err := w.runIn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		return
	}
	if len(group) > 1 {
		for _, w := range group {
			w.fail(g.write(w.runIn))
		}
		return
	}
	group[0].fail(err)
}

// runIn runs the write in tx; its error is the transaction's, when the
// write failed in a way that may have left part of it written.
func (w *groupedWrite) runIn(tx *db.Tx) error {
	w.out, w.err = w.modifyIn(tx)
	if errors.Is(w.err, errGroupAborted) {
		return w.err
	}
	return nil
}

// fail records err, the transaction's failure, as the write's outcome.
func (w *groupedWrite) fail(err error) {
	if err != nil {
		w.out, w.err = nil, err
	}
}

// modifyIn is one Modify inside tx: the object's errors and its callback's
// are the write's own; a failed update is the transaction's
// (errGroupAborted wrapping it), since it may have written part of itself.
func (w *groupedWrite) modifyIn(tx *db.Tx) (db.Object, error) {
	obj, err := tx.Get(w.r, w.ns, w.name)
	if err != nil {
		return nil, err
	}
	err = w.fn(obj)
	if errors.Is(err, db.ErrUnchanged) {
		// NOTE: fn may have changed obj before deciding; return what is stored.
		return tx.Get(w.r, w.ns, w.name)
	}
	if err != nil {
		return nil, err
	}
	if err := tx.Update(w.r, obj); err != nil {
		return nil, &abortError{err}
	}
	return obj, nil
}

// abortError is an update that failed inside a group's transaction.
type abortError struct{ err error }

func (e *abortError) Error() string        { return e.err.Error() }
func (e *abortError) Unwrap() error        { return e.err }
func (e *abortError) Is(target error) bool { return target == errGroupAborted }
