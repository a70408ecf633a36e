package runtime

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/errdefs"
)

// silentProcess is a process whose kill succeeds and whose exit is never
// reported (or reported at once when exits).
type silentProcess struct {
	containerd.Process // NOTE: only the methods withKill calls are implemented
	exits              bool
	stopped            bool // Status says so
	statusErr          error
	killed             bool
	killErr            error
}

func (p *silentProcess) ID() string  { return "c1" }
func (p *silentProcess) Pid() uint32 { return 42 }
func (p *silentProcess) Wait(context.Context) (<-chan containerd.ExitStatus, error) {
	ch := make(chan containerd.ExitStatus, 1)
	if p.exits {
		ch <- *containerd.NewExitStatus(137, time.Now(), nil)
	}
	return ch, nil
}

func (p *silentProcess) Status(context.Context) (containerd.Status, error) {
	if p.stopped {
		return containerd.Status{Status: containerd.Stopped, ExitStatus: 0}, p.statusErr
	}
	return containerd.Status{Status: containerd.Running}, p.statusErr
}

func (p *silentProcess) Kill(_ context.Context, sig syscall.Signal, _ ...containerd.KillOpts) error {
	p.killed = sig == syscall.SIGKILL
	return p.killErr
}

func TestWithKillIsBounded(t *testing.T) {
	defer func(d time.Duration) { killWait = d }(killWait)
	killWait = 50 * time.Millisecond
	for name, p := range map[string]*silentProcess{
		"exit reported":             {exits: true},
		"no exit ever reported":     {},
		"kill finds no process":     {killErr: errdefs.ErrNotFound},
		"kill of a stopped process": {killErr: errdefs.ErrFailedPrecondition},
		"status unknown":            {exits: true, statusErr: errdefs.ErrUnavailable},
	} {
		done := make(chan error, 1)
		go func() { done <- withKill(context.Background(), p) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: withKill still waits after 10s", name)
		}
		if !p.killed {
			t.Errorf("%s: not killed with SIGKILL", name)
		}
	}
}

// TestWithKillSparesAnExitedProcess: no kill (a runc process for a task)
// once the process has exited.
func TestWithKillSparesAnExitedProcess(t *testing.T) {
	p := &silentProcess{stopped: true}
	if err := withKill(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if p.killed {
		t.Error("an exited process was killed")
	}
}
