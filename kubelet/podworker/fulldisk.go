package podworker

import (
	"errors"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/skiff-sh/skiff/db"
)

// Back-off of a pod status write that the full disk refused.
const (
	fullDiskRetryBase = 100 * time.Millisecond
	fullDiskRetryMax  = 5 * time.Second
)

// modify is Store.Modify and write Store.Write for the worker's writes
// (the store commits those that land together in one transaction): both
// wait out a full disk (see whileFull).
func (m *Manager) modify(r db.Resource, namespace, name string, fn func(db.Object) error) (db.Object, error) {
	var obj db.Object
	err := m.whileFull(func() error {
		var err error
		obj, err = m.cfg.Store.Modify(r, namespace, name, fn)
		return err
	})
	return obj, err
}

func (m *Manager) write(fn func(tx *db.Tx) error) error {
	return m.whileFull(func() error { return m.cfg.Store.Write(fn) })
}

// whileFull runs write until the store takes it or refuses it for another
// reason than a full disk; while the disk is full it tries again with
// back-off, until the daemon stops (then the last error is returned).
//
// NOTE: a status write is never dropped for lack of space: dropping it
// would lose an exit or turn a container's end into a wrong outcome. The
// worker waits instead; its containers keep running meanwhile.
func (m *Manager) whileFull(write func() error) error {
	err := write()
	if !errors.Is(err, db.ErrNoSpace) || m.ctx == nil {
		return err
	}
	logrus.WithError(err).Warn("pod status write refused: the disk is full; retrying")
	delay := fullDiskRetryBase
	for errors.Is(err, db.ErrNoSpace) {
		t := time.NewTimer(delay)
		select {
		case <-m.ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, fullDiskRetryMax)
		err = write()
	}
	if err == nil {
		logrus.Info("pod status write done once the disk took it")
	}
	return err
}
