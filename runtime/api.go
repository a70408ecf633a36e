// Package runtime runs skiff's containers through containerd: images, the OCI
// spec built from a ContainerConfig, tasks, their exits, and recovery of the
// containers that outlive skiffd.
package runtime

import (
	"errors"
	"syscall"
	"time"
)

// Error classes (errors.Is).
var (
	// ErrNotFound: no container (or task) with that ID.
	ErrNotFound = errors.New("not found")
	// ErrImageNotPresent: pull policy Never (or no registry reachable) and the image is absent.
	ErrImageNotPresent = errors.New("image not present")
	// ErrImagePull: pulling the image failed (the kubelet's ErrImagePull).
	ErrImagePull = errors.New("pulling image")
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

// The states List reports.
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
