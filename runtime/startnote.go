package runtime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/containerd"
	"github.com/containerd/errdefs"
)

// startNoteName is the file Start leaves in a task's shim bundle before it
// asks the task to start. containerd removes the bundle with the task, so
// the note lives exactly as long as the task it speaks for.
const startNoteName = "skiff-start-requested"

// noteStart notes that task id is about to be asked to start, so that a
// task later found stopped can be told from one that never ran (see
// lostBeforeStart). A note that cannot be written fails the start
// (transient): starting without it could have the container run twice.
// When containerd's bundles are not where this Runtime looks (its state
// directory set elsewhere), there is nothing to note, and
// lostBeforeStart, finding no bundle either, never claims a task did
// not run.
func (r *Runtime) noteStart(id string) error {
	bundle := filepath.Join(r.bundleRoot(), id)
	if _, err := os.Stat(bundle); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(bundle, startNoteName), os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		return fmt.Errorf("noting the start of %q: %w (%w)", id, err, errdefs.ErrAborted)
	}
	return nil
}

// lostBeforeStart reports whether task id, found in status st, never ran
// although containerd holds it: stopped or unknown, and never asked to
// start (its bundle is there without Start's note). containerd stops such
// a task when the request that made it is cut short (skiffd died, or
// containerd restarted meanwhile) and reports exit 137 for it; or it
// cannot read the task's state from its shim at all (status "unknown").
// The note is written to the page cache only: it needs to outlive skiffd
// and containerd, not the machine, which no task outlives either.
func (r *Runtime) lostBeforeStart(id string, st containerd.ProcessStatus) bool {
	if st != containerd.Stopped && st != containerd.Unknown {
		return false
	}
	bundle := filepath.Join(r.bundleRoot(), id)
	if _, err := os.Stat(bundle); err != nil {
		return false
	}
	_, err := os.Stat(filepath.Join(bundle, startNoteName))
	return errors.Is(err, os.ErrNotExist)
}
