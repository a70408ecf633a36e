package runtime

import (
	"sync"
	"time"
)

// unknownGrace is how long a task that may have run is read again while
// containerd answers status "unknown" for it, before it is reported
// exited (UnknownExitCode).
//
// NOTE: containerd answers "unknown" when the task's shim does not answer
// within its state timeout (2 s): a shim that is slow on a loaded machine
// or stuck a moment, not an exit; reporting it exited would fail a pod
// whose container runs on. A shim that never answers again is given up on
// after this, so that the pod, whose worker reads the task again until it
// is known, is not held for ever.
const unknownGrace = time.Minute

// unknownTasks remembers since when each task has been found "unknown".
type unknownTasks struct {
	mu    sync.Mutex
	since map[string]time.Time
}

// seen records that task id is found unknown at now and returns for how
// long it has been, without a known status in between.
func (u *unknownTasks) seen(id string, now time.Time) time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.since == nil {
		u.since = map[string]time.Time{}
	}
	first, ok := u.since[id]
	if !ok {
		u.since[id] = now
		return 0
	}
	return now.Sub(first)
}

// forget drops what is known of task id: its status was read, or it is gone.
func (u *unknownTasks) forget(id string) {
	u.mu.Lock()
	delete(u.since, id)
	u.mu.Unlock()
}
