package runtime

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
)

// Error classes (errors.Is).
var (
	// ErrNotFound: no container (or task) with that ID.
	ErrNotFound = errors.New("not found")
	// ErrStarted: the instance started before and must not start again
	// (Start of an instance found started).
	ErrStarted = errors.New("instance started before")
	// ErrImageNotPresent: pull policy Never (or no registry reachable) and the image is absent.
	ErrImageNotPresent = errors.New("image not present")
	// ErrImagePull: pulling the image failed (the kubelet's ErrImagePull).
	ErrImagePull = errors.New("pulling image")
	// ErrTaskUnknown: containerd cannot read a started task from its shim
	// (StateUnknown). Transient (IsTransient): read the instance again.
	ErrTaskUnknown = fmt.Errorf("its shim does not answer containerd (status unknown): %w", errdefs.ErrUnavailable)
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
	// LabelLogPath holds ContainerConfig.LogPath; Create sets it.
	LabelLogPath = "io.skiff.container.log-path"
)

// PullPolicy mirrors corev1.PullPolicy without importing it.
type PullPolicy string

// The pull policies, as in corev1.
const (
	PullAlways       PullPolicy = "Always"
	PullIfNotPresent PullPolicy = "IfNotPresent"
	PullNever        PullPolicy = "Never"
)

// ContainerConfig is everything runtime needs to create one container
// instance. Command/Args follow Kubernetes semantics: Command replaces the
// image ENTRYPOINT (and drops its CMD); Args replaces the image CMD.
type ContainerConfig struct {
	ID         string // containerd container ID, unique per instance
	Image      string // image ref, normalized by Create (busybox:1.35 = docker.io/library/busybox:1.35)
	Command    []string
	Args       []string
	Env        []string // "K=V", applied over the image's env
	WorkingDir string   // "" = image's
	Hostname   string
	Labels     map[string]string // the Label* keys above, and anything else
	LogPath    string            // CRI-format log file written by the log driver; "" = output discarded
	StopSignal syscall.Signal    // 0 = image's STOPSIGNAL or SIGTERM
	// MemoryLimit is the cgroup memory limit in bytes (resources.limits.memory); 0 = none.
	MemoryLimit int64

	// CPUShares is cpu.shares (cgroup v1; cpu.weight derived on v2), from
	// requests.cpu as the kubelet computes it (milliCPU*1024/1000, min 2); 0 = unset.
	CPUShares uint64
	// CPUQuota/CPUPeriod from limits.cpu (period 100000µs); 0 = no limit.
	CPUQuota  int64
	CPUPeriod uint64

	// User is the process identity from securityContext; nil = the image's user.
	User *User
	// Privileged, ReadOnlyRootfs, NoNewPrivileges (allowPrivilegeEscalation=false),
	// capabilities added/dropped over the runtime's default set ("NET_ADMIN" or
	// "CAP_NET_ADMIN"; "ALL"), seccomp, procMount Unmasked, sysctls.
	Privileged      bool
	ReadOnlyRootfs  bool
	NoNewPrivileges bool
	CapAdd, CapDrop []string
	Seccomp         Seccomp
	UnmaskedProc    bool
	Sysctls         map[string]string

	// NetNSPath joins an existing network namespace (the pod's, set up by CNI);
	// "" = the host's network.
	NetNSPath string
	// HostsPath and ResolvConfPath are bind-mounted at /etc/hosts and
	// /etc/resolv.conf; "" = the host's files (read-only).
	HostsPath      string
	ResolvConfPath string
	// HostnamePath is bind-mounted at /etc/hostname, as containerd CRI
	// mounts the sandbox's hostname file; "" = the image's own.
	HostnamePath string
	// PIDNSPath joins another process's PID namespace (ephemeral containers
	// with a target, shareProcessNamespace); "" = its own.
	PIDNSPath string
	// Mounts are volume mounts, applied in order after the defaults.
	Mounts []Mount
	// Stdin keeps the container's stdin open for AttachStdin; TTY allocates
	// a terminal (output still goes to LogPath, which TTY requires). Stdin
	// works only with TTY: the shim gives a non-terminal process beside the
	// log driver no stdin (see stdin.go).
	Stdin bool
	TTY   bool
	// RuntimeType is the containerd runtime (shim) that runs the container,
	// "io.containerd.runc.v2" for instance; "" = containerd's default, runc.
	RuntimeType string
}

// DefaultRuntimeType is containerd's runc shim: the runtime of the "runc"
// handler, and of every pod that names no RuntimeClass.
const DefaultRuntimeType = "io.containerd.runc.v2"

// User is a numeric process identity.
type User struct {
	UID    uint32
	GID    *uint32  // nil = the primary group of UID in the image's /etc/passwd, else 0
	Groups []uint32 // supplementary groups (supplementalGroups, fsGroup)
}

// SeccompType mirrors corev1.SeccompProfileType.
type SeccompType string

const (
	SeccompRuntimeDefault SeccompType = "RuntimeDefault"
	SeccompUnconfined     SeccompType = "Unconfined"
	SeccompLocalhost      SeccompType = "Localhost"
)

// Seccomp is the container's seccomp profile; the zero value = RuntimeDefault.
type Seccomp struct {
	Type          SeccompType
	LocalhostPath string // absolute path of the JSON profile, for Localhost
}

// Mount is one mount in the container.
type Mount struct {
	Source      string
	Destination string
	Type        string   // "bind" (default) or "tmpfs"
	Options     []string // e.g. "ro", "rbind", "size=64m"
}

// ImageInfo is what the pod worker needs to know of a local image.
type ImageInfo struct {
	Ref  string // normalized name
	ID   string // repo digest for containerStatus.imageID, e.g. docker.io/library/busybox@sha256:…
	User string // config.User ("" = root)
	// Size is the image's size in bytes as stored (manifest, config and
	// compressed layers), for the Pulled event.
	Size int64
}

// TerminalSize is a TTY size.
type TerminalSize struct{ Width, Height uint16 }

// ExecConfig is a process run inside a running container.
type ExecConfig struct {
	Args   []string
	Env    []string // added to the container's env
	TTY    bool
	Stdin  io.Reader           // nil = no stdin
	Stdout io.Writer           // nil = discarded
	Stderr io.Writer           // nil = discarded (ignored with TTY)
	Resize <-chan TerminalSize // TTY sizes, applied as they come
}

// ExitStatus is how a task ended.
type ExitStatus struct {
	// Code is the exit code; 128+n when killed by signal n (as runc reports
	// it); UnknownExitCode when the exit could not be learned.
	Code     int32
	Signal   syscall.Signal // when killed by a signal (Code = 128+sig), else 0
	ExitedAt time.Time
	// OOMKilled: the kernel's OOM killer killed a process of this container.
	OOMKilled bool
}

// UnknownExitCode is ExitStatus.Code when the exit could not be learned
// (the task vanished, or its state is unknown).
const UnknownExitCode = 255

// ContainerState is a container as recovery finds it.
type ContainerState string

// The states List and Inspect report (see the package doc).
const (
	// StateCreated: the container exists and never started (no task, a
	// task that was never started, or one stopped before Start asked it
	// to start): it may be started.
	StateCreated ContainerState = "created"
	// StateRunning: its task runs.
	StateRunning ContainerState = "running"
	// StateExited: its task stopped; Exit says how.
	StateExited ContainerState = "exited"
	// StateFinished: it started, and its task was deleted since (its exit
	// was recorded, or containerd lost the task): it must never start
	// again, and containerd no longer knows its exit.
	StateFinished ContainerState = "finished"
	// StateUnknown: its task was asked to start, and containerd cannot
	// read it from its shim (status "unknown": a shim slower than
	// containerd's state timeout, or stuck), for less than unknownGrace.
	// It may run or have exited: read it again with Inspect. Only List
	// reports it, so that one stuck shim does not hold the recovery of the
	// others; Inspect answers ErrTaskUnknown instead.
	StateUnknown ContainerState = "unknown"
)

// Container describes an existing container instance (for recovery).
type Container struct {
	ID        string
	Labels    map[string]string
	State     ContainerState
	StartedAt time.Time   // zero if never started
	Exit      *ExitStatus // set when State == StateExited
	// TaskCreated: StateCreated with a task made and never started. Start
	// it (Start does); never delete it to make it again, as a start
	// request cut short may still reach it.
	TaskCreated bool
	// RuntimeType is the containerd runtime the container was created
	// with (ContainerConfig.RuntimeType).
	RuntimeType string
}
