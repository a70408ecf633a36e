package daemon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/skiff-sh/skiff/runtime/supervisor"
)

// connectContainerd returns the address and state directory of a
// containerd to use: the configured one if it answers, else skiffd's own
// embedded containerd — one left running by an earlier skiffd is adopted,
// otherwise a new child is started (DESIGN.md "Embedded default"). stop
// stops a child started here.
func connectContainerd(ctx context.Context, cfg Config) (address, state string, stop func(), err error) {
	noop := func() {}
	if supervisor.Answering(ctx, cfg.ContainerdAddress) {
		return cfg.ContainerdAddress, cfg.ContainerdState, noop, nil
	}
	embedded := embeddedAddress(cfg)
	state = filepath.Join(filepath.Dir(embedded), "containerd-state")
	if supervisor.Answering(ctx, embedded) {
		logrus.WithField("address", embedded).Info("adopting the embedded containerd of an earlier run")
		return embedded, state, noop, nil
	}
	binary, err := exec.LookPath("containerd")
	if err != nil {
		return "", "", nil, fmt.Errorf("no containerd answers at %s and no containerd binary is on PATH", cfg.ContainerdAddress)
	}
	dir := filepath.Join(cfg.DataDir, "containerd")
	logFile, err := os.OpenFile(filepath.Join(cfg.DataDir, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", "", nil, fmt.Errorf("opening containerd log: %w", err)
	}
	logrus.WithFields(logrus.Fields{"address": embedded, "binary": binary}).Info("starting embedded containerd")
	proc, err := supervisor.Start(ctx, supervisor.Config{
		Binary:  binary,
		Root:    filepath.Join(dir, "root"),
		State:   state,
		Address: embedded,
		Log:     logFile,
	})
	if err != nil {
		logFile.Close()
		return "", "", nil, fmt.Errorf("starting embedded containerd: %w", err)
	}
	return embedded, state, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := proc.Stop(ctx); err != nil {
			logrus.WithError(err).Error("stopping embedded containerd")
		}
		logFile.Close()
	}, nil
}

// runDir holds skiffd's runtime files (sockets, FIFOs): beside its socket,
// else under the data dir.
func runDir(cfg Config) string {
	if cfg.Socket != "" {
		return filepath.Dir(cfg.Socket)
	}
	return cfg.DataDir
}

// embeddedAddress puts the embedded containerd's socket beside skiffd's own
// (short paths: unix socket names are limited to 108 bytes), or under the
// data dir when skiffd has no socket.
func embeddedAddress(cfg Config) string {
	return filepath.Join(runDir(cfg), "containerd.sock")
}
