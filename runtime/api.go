package runtime

// CONTRACT FILE — the runtime helper replaces every panic body with the real
// implementation (splitting into files as it likes), keeping these signatures.

import (
	"context"
	"errors"
	"syscall"
	"time"
)

// Error classes (errors.Is).
var (
	ErrNotFound = errors.New("not found")
	// ErrImageNotPresent: pull policy Never (or no registry reachable) and the image is absent.
	ErrImageNotPresent = errors.New("image not present")
)

// Labels put on every containerd container skiff creates, so that recovery
// can find its containers and map them back to pods.
const (
	LabelManaged       = "io.skiff.managed" // "true"
	LabelPodUID        = "io.skiff.pod.uid"
	LabelPodName       = "io.skiff.pod.name"
	LabelPodNamespace  = "io.skiff.pod.namespace"
	LabelContainerName = "io.skiff.container.name"
	LabelAttempt       = "io.skiff.container.attempt" // restart count of this instance, decimal
)

// PullPolicy mirrors corev1.PullPolicy without importing it.
type PullPolicy string

const (
	PullAlways       PullPolicy = "Always"
	PullIfNotPresent PullPolicy = "IfNotPresent"
	PullNever        PullPolicy = "Never"
)

// ContainerConfig is everything runtime needs to create one container
// instance. Command/Args follow Kubernetes semantics: Command replaces the
// image ENTRYPOINT (and drops its CMD); Args replaces the image CMD.
type ContainerConfig struct {
	ID         string            // containerd container ID, unique per instance
	Image      string            // normalized ref, e.g. docker.io/library/busybox:1.35
	Command    []string
	Args       []string
	Env        []string // "K=V", applied over the image's env
	WorkingDir string   // "" = image's
	Hostname   string
	Labels     map[string]string // the Label* keys above, and anything else
	LogPath    string            // CRI-format log file written by the log driver
	StopSignal syscall.Signal    // 0 = image's STOPSIGNAL or SIGTERM
}

// ExitStatus is how a task ended.
type ExitStatus struct {
	Code     int32
	Signal   syscall.Signal // when killed by a signal (Code = 128+sig), else 0
	ExitedAt time.Time
	OOMKilled bool
}

// ContainerState is a container as recovery finds it.
type ContainerState string

const (
	StateCreated ContainerState = "created" // container exists, no task / task never started
	StateRunning ContainerState = "running"
	StateExited  ContainerState = "exited"
)

// Container describes an existing container instance (for recovery).
type Container struct {
	ID        string
	Labels    map[string]string
	State     ContainerState
	StartedAt time.Time   // zero if never started
	Exit      *ExitStatus // set when State == StateExited
}

// Runtime is the containerd client skiff uses. Safe for concurrent use.
type Runtime struct{}

// New connects to containerd at address and uses namespace ns.
// logDriver is the path of the binary the shim runs as the log driver
// (normally skiffd itself, os.Executable()).
func New(ctx context.Context, address, ns, logDriver string) (*Runtime, error) {
	panic("contract")
}

// Close closes the client connection (containers keep running).
func (r *Runtime) Close() error { panic("contract") }

// Version returns containerd's version string (for /readyz and the node).
func (r *Runtime) Version(ctx context.Context) (string, error) { panic("contract") }

// EnsureImage makes ref present and unpacked according to policy.
// It returns ErrImageNotPresent (wrapped, with a message) for PullNever when absent,
// and the pull error otherwise.
func (r *Runtime) EnsureImage(ctx context.Context, ref string, policy PullPolicy) error {
	panic("contract")
}

// Create creates the container (snapshot, OCI spec, labels); it does not start it.
func (r *Runtime) Create(ctx context.Context, cfg ContainerConfig) error { panic("contract") }

// Start creates and starts the task with its stdout/stderr going to the log
// driver, and returns a channel that receives exactly one ExitStatus when the
// task exits. The exit wait is registered before the task starts.
func (r *Runtime) Start(ctx context.Context, id string) (startedAt time.Time, exit <-chan ExitStatus, err error) {
	panic("contract")
}

// Wait re-attaches to a running task (after a daemon restart) and returns the
// same kind of exit channel. If the task already exited, the channel yields its status at once.
func (r *Runtime) Wait(ctx context.Context, id string) (<-chan ExitStatus, error) { panic("contract") }

// Stop sends the stop signal, waits up to grace, then SIGKILLs; it returns
// when the task is gone. Not found / already exited = nil.
func (r *Runtime) Stop(ctx context.Context, id string, grace time.Duration) error { panic("contract") }

// Remove deletes the task, the container and its snapshot. Not found = nil.
func (r *Runtime) Remove(ctx context.Context, id string) error { panic("contract") }

// List returns every container in the namespace carrying LabelManaged.
func (r *Runtime) List(ctx context.Context) ([]Container, error) { panic("contract") }
