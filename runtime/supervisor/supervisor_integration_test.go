//go:build integration

package supervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestStartStop(t *testing.T) {
	binary, err := exec.LookPath("containerd")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("/tmp", "ctd")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	log, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cfg := Config{
		Binary:  binary,
		Root:    filepath.Join(dir, "root"),
		State:   filepath.Join(dir, "state"),
		Address: filepath.Join(sockDir, "c.sock"),
		Log:     log,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	p, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !Answering(ctx, cfg.Address) {
		t.Error("not answering after Start")
	}
	// Its own process group: a Ctrl-C to ours does not reach it.
	if pgid, err := syscall.Getpgid(p.Pid()); err != nil || pgid != p.Pid() {
		t.Errorf("process group %d (%v), want %d", pgid, err, p.Pid())
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done not closed after Stop")
	}
	if Answering(ctx, cfg.Address) {
		t.Error("still answering after Stop")
	}
}

func TestStartFailure(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{
		Binary:  "/bin/false",
		Root:    filepath.Join(dir, "root"),
		State:   filepath.Join(dir, "state"),
		Address: filepath.Join(dir, "c.sock"),
	}
	if _, err := Start(context.Background(), cfg); !errors.Is(err, ErrExited) {
		t.Errorf("Start of a binary that exits: %v, want ErrExited", err)
	}
}
