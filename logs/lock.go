package logs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// flock applies flock(2) operation how to f, retrying when interrupted.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// isWriterGone reports whether no driver holds the exclusive lock on f any
// more, so that f is complete. It does not block.
func isWriterGone(f *os.File) (bool, error) {
	err := flock(f, syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	if err := flock(f, syscall.LOCK_UN); err != nil {
		return false, fmt.Errorf("unlocking %s: %w", f.Name(), err)
	}
	return true, nil
}
