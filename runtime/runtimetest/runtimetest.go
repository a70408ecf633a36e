// Package runtimetest starts a private containerd for integration tests of
// any package, with the busybox test image imported. Meant for TestMain:
//
//	env, err := runtimetest.Containerd(dir)
//	...
//	code := m.Run()
//	env.Stop()
package runtimetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
	"github.com/containerd/errdefs"
	"github.com/skiff-sh/skiff/runtime"
	"github.com/skiff-sh/skiff/runtime/supervisor"
)

// Image is the test image's name once imported.
const Image = "docker.io/library/busybox:1.35"

// ImageEnv names the variable that overrides the test image tarball path
// (default <module root>/build/busybox-1.35.tar).
const ImageEnv = "SKIFF_TEST_IMAGE"

// Env is a private containerd with the test image in Namespace.
type Env struct {
	Address   string // containerd's socket
	State     string // containerd's state directory (shim bundles)
	Namespace string // where the test image is, and tests' containers go
	Log       string // containerd's log file

	cfg     supervisor.Config
	proc    *supervisor.Process
	sockDir string
}

// Containerd starts a containerd keeping its root and state under dir,
// listening on a short socket path under /tmp (unix socket paths are
// limited to 108 bytes), and imports the test image into namespace "skiff".
func Containerd(dir string) (_ *Env, retErr error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	image, err := imagePath()
	if err != nil {
		return nil, err
	}
	binary, err := exec.LookPath("containerd")
	if err != nil {
		return nil, fmt.Errorf("finding containerd (apt-get install containerd): %w", err)
	}
	sockDir, err := os.MkdirTemp("/tmp", "ctd")
	if err != nil {
		return nil, fmt.Errorf("creating socket dir: %w", err)
	}
	env := &Env{
		Address:   filepath.Join(sockDir, "c.sock"),
		State:     filepath.Join(dir, "state"),
		Namespace: "skiff",
		Log:       filepath.Join(dir, "containerd.log"),
		sockDir:   sockDir,
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(sockDir)
		}
	}()
	env.cfg = supervisor.Config{
		Binary:  binary,
		Root:    filepath.Join(dir, "root"),
		State:   env.State,
		Address: env.Address,
	}
	if err := env.start(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			env.Stop()
		}
	}()
	if err := env.importImage(ctx, image); err != nil {
		return nil, err
	}
	return env, nil
}

// start starts containerd, its output appended to env.Log.
func (e *Env) start(ctx context.Context) error {
	log, err := os.OpenFile(e.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening containerd log: %w", err)
	}
	defer log.Close() // containerd holds its own descriptor
	cfg := e.cfg
	cfg.Log = log
	if e.proc, err = supervisor.Start(ctx, cfg); err != nil {
		return fmt.Errorf("starting containerd (log in %s): %w", e.Log, err)
	}
	return nil
}

// Pid is containerd's process id (a benchmark accounts its CPU).
func (e *Env) Pid() int { return e.proc.Pid() }

// Restart stops containerd — with SIGTERM, or SIGKILL when kill is set —
// and starts it again on the same root, state and socket, as a restart of
// its service does. Shims and containers keep running meanwhile.
func (e *Env) Restart(ctx context.Context, kill bool) error {
	if kill {
		if err := syscall.Kill(e.proc.Pid(), syscall.SIGKILL); err != nil {
			return fmt.Errorf("killing containerd: %w", err)
		}
	}
	if err := e.proc.Stop(ctx); err != nil {
		return err
	}
	return e.start(ctx)
}

// importImage imports the tarball at path into env.Namespace.
func (e *Env) importImage(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening test image: %w", err)
	}
	defer f.Close()
	rt, err := runtime.New(ctx, e.Address, e.Namespace, "/bin/false")
	if err != nil {
		return err
	}
	defer rt.Close()
	if _, err := rt.ImportImage(ctx, f); err != nil {
		return fmt.Errorf("importing test image %s: %w", path, err)
	}
	return nil
}

// Stop deletes every container left in containerd (killing its task), so no
// shim or workload outlives the test, then stops containerd.
func (e *Env) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if e.proc == nil { // a Restart whose start failed: nothing answers to remove the containers
		return errors.Join(errors.New("containerd was not running (a restart failed)"), os.RemoveAll(e.sockDir))
	}
	errs := []error{e.removeAll(ctx)}
	errs = append(errs, e.proc.Stop(ctx), os.RemoveAll(e.sockDir))
	return errors.Join(errs...)
}

// removeAll deletes all containers of every namespace.
func (e *Env) removeAll(ctx context.Context) error {
	client, err := containerd.New(e.Address)
	if err != nil {
		return fmt.Errorf("connecting to containerd: %w", err)
	}
	defer client.Close()
	nss, err := client.NamespaceService().List(ctx)
	if err != nil {
		return fmt.Errorf("listing namespaces: %w", err)
	}
	var errs []error
	for _, ns := range nss {
		nctx := namespaces.WithNamespace(ctx, ns)
		cs, err := client.Containers(nctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, c := range cs {
			errs = append(errs, removeContainer(nctx, c))
		}
		// NOTE: runc keeps a state directory per namespace; the test's
		// namespaces go with it (os.Remove leaves one still in use).
		_ = os.Remove(filepath.Join("/run/containerd/runc", ns))
	}
	return errors.Join(errs...)
}

func removeContainer(ctx context.Context, c containerd.Container) error {
	if task, err := c.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("deleting task %s: %w", c.ID(), err)
		}
	}
	if err := c.Delete(ctx, containerd.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("deleting container %s: %w", c.ID(), err)
	}
	return nil
}

// imagePath is the test image tarball: $SKIFF_TEST_IMAGE, else the one
// `make test-image` builds.
func imagePath() (string, error) {
	path := os.Getenv(ImageEnv)
	if path == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		path = filepath.Join(root, "build", "busybox-1.35.tar")
	}
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("test image %s missing (run `make test-image`, or set %s): %w", path, ImageEnv, err)
	}
	return path, nil
}

// moduleRoot is the nearest directory above the working directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("finding module root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Main is the body of an integration test package's TestMain: it starts a
// private containerd under a temporary directory, calls setup with it (nil
// setup = none; setup may prepare more under dir), runs the tests, stops
// containerd and returns the exit code for os.Exit.
func Main(m *testing.M, setup func(env *Env, dir string) error) (code int) {
	dir, err := os.MkdirTemp("", "skiff-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cdir := filepath.Join(dir, "containerd")
	if err := os.Mkdir(cdir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env, err := Containerd(cdir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting containerd:", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping containerd:", err)
			code = 1
		}
	}()
	if setup != nil {
		if err := setup(env, dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}

// Start starts a private containerd for one test, stopped when it ends.
func Start(t testing.TB) *Env {
	t.Helper()
	env, err := Containerd(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
		env.keepLog(t)
	})
	return env
}

// keepLog copies containerd's log of a failed test into SKIFF_TEST_LOGS,
// beside skiffd's: a crash test's verdict often rests on what containerd
// did meanwhile.
func (e *Env) keepLog(t testing.TB) {
	dir := os.Getenv("SKIFF_TEST_LOGS")
	if dir == "" || !t.Failed() {
		return
	}
	b, err := os.ReadFile(e.Log)
	if err != nil {
		t.Logf("keeping containerd's log: %v", err)
		return
	}
	name := strings.ReplaceAll(t.Name(), "/", "_") + ".containerd.log"
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Logf("keeping containerd's log: %v", err)
	}
}
