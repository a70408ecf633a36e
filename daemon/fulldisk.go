package daemon

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/skiff-sh/skiff/db"
)

// Back-off of a start-up step retried while the disk is full.
const (
	fullDiskRetryBase = time.Second
	fullDiskRetryMax  = 30 * time.Second
)

// isNoSpace reports whether err is a write refused for lack of disk space:
// the store's ErrNoSpace, ENOSPC or EDQUOT, or containerd's message for
// them (errno does not cross its API).
func isNoSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, db.ErrNoSpace) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, syscall.ENOSPC.Error()) || strings.Contains(msg, syscall.EDQUOT.Error())
}

// startOrRetry runs a start-up step that writes. If the disk refuses it
// for lack of space, skiffd starts anyway (serving reads) and retry, to be
// run in the background, does the step again with back-off until it is
// done. Any other error is returned: the step is fatal.
//
// NOTE: these steps (the system namespaces, the Node, the images given
// with --import-image) are wanted but not needed to serve what the store
// already holds; the API answers writes with 507 meanwhile.
func startOrRetry(what string, step func() error) (retry func(context.Context) error, err error) {
	err = step()
	if err == nil {
		return nil, nil
	}
	if !isNoSpace(err) {
		return nil, err
	}
	logrus.WithError(err).Warnf("%s: the disk is full; retrying in the background", what)
	return func(ctx context.Context) error {
		delay := fullDiskRetryBase
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(delay):
			}
			err := step()
			if err == nil {
				logrus.Infof("%s: done", what)
				return nil
			}
			if errors.Is(err, db.ErrClosed) {
				return err
			}
			logrus.WithError(err).Debugf("%s: retrying", what)
			delay = min(2*delay, fullDiskRetryMax)
		}
	}, nil
}
