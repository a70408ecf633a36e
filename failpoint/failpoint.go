// Package failpoint names the points of the pod lifecycle where a test
// build of skiffd kills itself, so that integration tests can prove that a
// kill -9 at any of them loses nothing and runs nothing twice.
//
// Built with the `failpoints` tag, Hit kills the process with SIGKILL when
// the environment variable SKIFF_FAILPOINT names the point ("<point>" or
// "<point>:<n>" for its n-th hit). Without the tag Hit is an empty
// function: production builds carry no way to trigger it.
package failpoint

// Env is the environment variable that arms a failpoint in a test build.
const Env = "SKIFF_FAILPOINT"

// The failpoints, in the order an instance meets them.
const (
	// AfterSnapshotPrepare: the instance's snapshot exists, its container
	// does not yet.
	AfterSnapshotPrepare = "after-snapshot-prepare"
	// AfterContainerCreate: the container exists, its task does not yet.
	AfterContainerCreate = "after-container-create"
	// AfterTaskCreate: the task exists (runc's container waits in its
	// shim); it was never asked to start.
	AfterTaskCreate = "after-task-create"
	// AfterTaskStart: the task runs; nothing recorded it as started yet.
	AfterTaskStart = "after-task-start"
	// InStatusWrite: inside the store transaction that writes a container's
	// exit into its pod's status, before it commits.
	InStatusWrite = "in-status-write"
	// AfterExitRecorded: the store holds the exit; the instance is not
	// removed yet.
	AfterExitRecorded = "after-exit-recorded"
	// BetweenTaskAndContainerDelete: the task is deleted, the container
	// and its snapshot are not.
	BetweenTaskAndContainerDelete = "between-task-and-container-delete"
	// AfterPodFinished: the pod's final status is stored; its containers,
	// network and volumes are not released yet.
	AfterPodFinished = "after-pod-finished"
)

// The failpoints of the CronJob controller (not in Points: no pod's life
// meets them).
const (
	// InCronJobSync: inside the store transaction of a CronJob sync that
	// created a Job, before it commits.
	InCronJobSync = "in-cronjob-sync"
	// AfterCronJobSync: a CronJob sync that created a Job committed; its
	// Events are not recorded yet.
	AfterCronJobSync = "after-cronjob-sync"
)

// Points lists every failpoint of a pod's life.
var Points = []string{
	AfterSnapshotPrepare, AfterContainerCreate, AfterTaskCreate, AfterTaskStart,
	InStatusWrite, AfterExitRecorded, BetweenTaskAndContainerDelete,
	AfterPodFinished,
}
