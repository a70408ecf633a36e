// Package supervisor runs skiff's embedded containerd: when no containerd
// answers on the configured socket, skiffd starts one as a child, the way
// k3s does, with its root and state under skiff's data directory.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd"
	"github.com/sirupsen/logrus"
)

// ErrExited: containerd exited before its socket answered.
var ErrExited = errors.New("containerd exited")

// startTimeout bounds how long Start waits for the socket to answer.
const startTimeout = 30 * time.Second

// Config says where the embedded containerd keeps its data and listens.
type Config struct {
	Binary  string // containerd executable; "" = "containerd" on PATH
	Root    string // persistent data (images, snapshots, metadata)
	State   string // ephemeral state; also holds the generated config.toml
	Address string // gRPC unix socket path
	// Log receives containerd's output; nil discards it. Prefer an *os.File:
	// containerd outlives skiffd, and a pipe into skiffd would break then.
	Log io.Writer
}

// Process is a running embedded containerd.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // exit error, valid once done is closed
}

// Start writes a minimal containerd config, starts `containerd --config` in
// its own process group (so a Ctrl-C to skiffd does not reach it; no
// parent-death signal either: containerd and its shims outlive skiffd), and
// returns once the socket answers, bounded by ctx and 30 seconds.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	binary := cfg.Binary
	if binary == "" {
		binary = "containerd"
	}
	configPath, err := writeConfig(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, "--config", configPath)
	cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = withoutNotify(os.Environ())
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	logrus.WithFields(logrus.Fields{"pid": cmd.Process.Pid, "address": cfg.Address}).Info("started embedded containerd")

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := p.waitAnswering(ctx, cfg.Address); err != nil {
		stopCtx, stopCancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer stopCancel()
		_ = p.Stop(stopCtx)
		return nil, err
	}
	return p, nil
}

// withoutNotify is env without systemd's notification variables: under a
// Type=notify unit they are skiffd's, and a containerd that inherited them
// would tell systemd it is ready on skiffd's behalf.
func withoutNotify(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// waitAnswering polls the socket until containerd answers, exits, or ctx ends.
func (p *Process) waitAnswering(ctx context.Context, address string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if Answering(ctx, address) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%w before answering on %s: %v", ErrExited, address, p.err)
		case <-ctx.Done():
			return fmt.Errorf("waiting for containerd on %s: %w", address, ctx.Err())
		case <-tick.C:
		}
	}
}

// Pid is the containerd process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when containerd has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop asks containerd to exit (SIGTERM) and SIGKILLs it if it has not
// when ctx ends. Running containers and their shims are not touched.
func (p *Process) Stop(ctx context.Context) error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling containerd: %w", err)
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing containerd: %w", err)
	}
	<-p.done
	return nil
}

// Answering reports whether a containerd serves on the unix socket at
// address, within ctx (and at most two seconds).
func Answering(ctx context.Context, address string) bool {
	if _, err := os.Stat(address); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	client, err := containerd.New(address, containerd.WithTimeout(timeLeft(ctx)))
	if err != nil {
		return false
	}
	defer client.Close()
	ok, err := client.IsServing(ctx)
	return err == nil && ok
}

// timeLeft is the time until ctx's deadline.
func timeLeft(ctx context.Context) time.Duration {
	deadline, _ := ctx.Deadline()
	return time.Until(deadline)
}

// writeConfig writes the containerd config into cfg.State and returns its path.
func writeConfig(cfg Config) (string, error) {
	for _, dir := range []string{cfg.Root, cfg.State, filepath.Dir(cfg.Address)} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return "", fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	path := filepath.Join(cfg.State, "config.toml")
	if err := os.WriteFile(path, []byte(configText(cfg)), 0o600); err != nil {
		return "", fmt.Errorf("writing containerd config: %w", err)
	}
	return path, nil
}

// configText is a version 2 containerd config: skiff's paths, the CRI
// plugin off (skiff talks to containerd directly). Snapshots use overlayfs,
// containerd's default, which runtime asks for by name.
func configText(cfg Config) string {
	return "# Written by skiffd for its embedded containerd; rewritten at each start.\n" +
		"version = 2\n" +
		"root = " + strconv.Quote(cfg.Root) + "\n" +
		"state = " + strconv.Quote(cfg.State) + "\n" +
		"disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n" +
		"\n[grpc]\n" +
		"  address = " + strconv.Quote(cfg.Address) + "\n"
}
