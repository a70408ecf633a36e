// Package sdnotify tells systemd how skiffd is doing through the service
// notification protocol (sd_notify(3)) when it runs as a Type=notify unit:
// STATUS= lines while it starts, READY=1 once its API answers, WATCHDOG=1
// while it keeps answering, STOPPING=1 when it shuts down. Without
// NOTIFY_SOCKET in the environment every call does nothing.
package sdnotify

import (
	"context"
	"os"
	"sync"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
	"github.com/sirupsen/logrus"
)

// Probe reports whether the service answers; nil means it does.
type Probe func(ctx context.Context) error

// Notifier sends skiffd's notifications. Safe for concurrent use.
type Notifier struct {
	// enabled: systemd listens (NOTIFY_SOCKET is set).
	enabled bool
	// watchdog is the WatchdogSec= systemd set (WATCHDOG_USEC); 0 = none.
	watchdog time.Duration
	// retry is how often Ready probes again while the service does not answer.
	retry time.Duration

	mu       sync.Mutex
	stopping bool // STOPPING=1 was sent: no more pings
}

// New reads the notification socket and the watchdog interval from the
// environment systemd gave the process.
func New() *Notifier {
	n := &Notifier{enabled: os.Getenv("NOTIFY_SOCKET") != "", retry: 100 * time.Millisecond}
	if d, err := sddaemon.SdWatchdogEnabled(false); err != nil {
		logrus.WithError(err).Warn("systemd watchdog settings ignored")
	} else {
		n.watchdog = d
	}
	return n
}

// Status sets the one-line status `systemctl status skiffd` shows.
func (n *Notifier) Status(s string) { n.send("STATUS=" + s) }

// Ready waits until probe passes (or ctx ends) and then tells systemd that
// skiffd has started, with status as its status line. It returns whether
// it got there.
func (n *Notifier) Ready(ctx context.Context, probe Probe, status string) bool {
	if !n.enabled {
		return true
	}
	for {
		if err := n.probe(ctx, probe); err == nil {
			n.send(sddaemon.SdNotifyReady + "\nSTATUS=" + status)
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(n.retry):
		}
	}
}

// Stopping tells systemd that skiffd is shutting down.
func (n *Notifier) Stopping(status string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.stopping = true
	n.send(sddaemon.SdNotifyStopping + "\nSTATUS=" + status)
}

// Watchdog, when systemd asked for one (WatchdogSec=), pings it every half
// interval for as long as probe passes, until ctx ends. A skiffd that stops
// answering misses its pings, and systemd restarts it (its containers keep
// running, KillMode=process). Without a watchdog it returns at once.
//
// NOTE: the kubelet's systemd watchdog does the same: it pets the watchdog
// only while its own health checks pass.
func (n *Notifier) Watchdog(ctx context.Context, probe Probe) {
	if !n.enabled || n.watchdog <= 0 {
		return
	}
	tick := time.NewTicker(n.watchdog / 2)
	defer tick.Stop()
	for {
		if err := n.probe(ctx, probe); err != nil {
			if ctx.Err() != nil {
				return
			}
			logrus.WithError(err).Warn("not answering: systemd watchdog not notified")
		} else {
			n.ping()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// ping sends WATCHDOG=1 unless skiffd is stopping.
func (n *Notifier) ping() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopping {
		n.send(sddaemon.SdNotifyWatchdog)
	}
}

// probe runs p bounded by a fraction of the watchdog interval (or a few
// seconds), so that a hung probe counts as a failure in time.
func (n *Notifier) probe(ctx context.Context, p Probe) error {
	timeout := 5 * time.Second
	if n.watchdog > 0 {
		timeout = min(timeout, n.watchdog/4)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return p(ctx)
}

func (n *Notifier) send(state string) {
	if _, err := sddaemon.SdNotify(false, state); err != nil {
		logrus.WithError(err).Debug("notifying systemd")
	}
}
