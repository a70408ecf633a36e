package runtime

import (
	"context"
	"time"

	"github.com/sirupsen/logrus"
)

// logger is the entry for messages about container id ("" = the runtime).
func logger(id string) *logrus.Entry {
	entry := logrus.WithField("component", "runtime")
	if id != "" {
		entry = entry.WithField("container", id)
	}
	return entry
}

// deferContext is a fresh context for cleanup that must run even when ctx
// is done (containerd's DeferContext): one minute, ctx's values kept.
func deferContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}
