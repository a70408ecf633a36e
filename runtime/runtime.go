package runtime

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/containerd/containerd"
	"github.com/containerd/containerd/namespaces"
)

// Runtime is the containerd client skiff uses. Safe for concurrent use.
//
// Exit channels returned by Start and Wait are fed by goroutines that live
// until Close: after Close they never yield (the daemon is going away, the
// tasks keep running, and the next Runtime recovers their exits).
type Runtime struct {
	client      *containerd.Client
	address     string // containerd's socket
	state       string // containerd's state directory (shim bundles)
	ns          string
	logDriver   string
	logArg      func(logPath string) string // the log driver's argument
	snapshotter string

	// ctx lives until Close; exit monitors and the OOM watcher run under it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	registryConfig string // docker config.json with registry credentials; "" = none
	fifoDir        string

	locks idLocks // one lifecycle operation per container ID at a time

	images *imageCache

	mu          sync.Mutex
	closing     bool            // Close has begun: background runs nothing more
	oom         map[string]bool // container IDs that had an OOM kill
	orphanTasks map[string]bool // IDs the last sweep found task leftovers of
	created     map[string]createdContainer

	unknown unknownTasks // tasks containerd answered "unknown" for
}

// New connects to containerd at address and uses namespace ns.
// logDriver is the path of the binary the shim runs as the log driver
// (skiffd gives skiff-log-driver, which it finds beside itself; tests may
// give their own binary); it must be absolute.
func New(ctx context.Context, address, ns, logDriver string, opts ...Option) (*Runtime, error) {
	if !filepath.IsAbs(logDriver) {
		return nil, fmt.Errorf("log driver %q: not an absolute path", logDriver)
	}
	client, err := containerd.New(address, containerd.WithDefaultNamespace(ns))
	if err != nil {
		return nil, fmt.Errorf("connecting to containerd at %s: %w", address, err)
	}
	o := options{fifoDir: DefaultFIFODir, containerdState: DefaultContainerdState, logDriverArg: func(p string) string { return p }}
	for _, opt := range opts {
		opt(&o)
	}
	rctx, cancel := context.WithCancel(namespaces.WithNamespace(context.Background(), ns))
	r := &Runtime{
		client:         client,
		address:        address,
		state:          o.containerdState,
		ns:             ns,
		logDriver:      logDriver,
		logArg:         o.logDriverArg,
		snapshotter:    containerd.DefaultSnapshotter,
		registryConfig: o.registryConfig,
		fifoDir:        o.fifoDir,
		ctx:            rctx,
		cancel:         cancel,
		oom:            map[string]bool{},
		images:         newImageCache(),
	}
	if _, err := r.Version(ctx); err != nil {
		r.Close()
		return nil, err
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.watchOOM(rctx)
	}()
	return r, nil
}

// background runs f off the caller's path; Close waits for it. Once
// Close has begun, f runs on the caller's path.
func (r *Runtime) background(f func()) {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		f()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		f()
	}()
}

// Close closes the client connection (containers keep running). Exit
// channels handed out earlier never yield afterwards.
func (r *Runtime) Close() error {
	r.mu.Lock()
	r.closing = true // NOTE: no wg.Add may race the Wait below
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	if err := r.client.Close(); err != nil {
		return fmt.Errorf("closing containerd client: %w", err)
	}
	return nil
}

// Version returns containerd's version string (for /readyz and the node).
func (r *Runtime) Version(ctx context.Context) (string, error) {
	v, err := r.client.Version(r.withNS(ctx))
	if err != nil {
		return "", fmt.Errorf("asking containerd its version: %w", err)
	}
	return v.Version, nil
}

// withNS puts skiff's containerd namespace on ctx.
func (r *Runtime) withNS(ctx context.Context) context.Context {
	return namespaces.WithNamespace(ctx, r.ns)
}
