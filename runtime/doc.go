// Package runtime runs skiff's containers through containerd: images, the OCI
// spec built from a ContainerConfig, tasks, their exits, and recovery of the
// containers that outlive skiffd.
//
// # An instance's life
//
// Each container instance (a pod UID, a container name and an attempt; one
// containerd container ID) moves through four steps, and containerd keeps
// a durable trace of each before skiff relies on it:
//
//	created   Create: a snapshot (labelled managed, under a lease named
//	          after the ID), then the container record with its labels.
//	started   Start: a task (containerd records it, status Created, before
//	          it runs), a note in its shim bundle that it is asked to
//	          start, then the task started, then the started-at label.
//	exited    the task is stopped; its exit stays in containerd until the
//	          task is deleted. The caller records it (the pod's status).
//	removed   Remove: the removing label (on a container that never
//	          started: the started-at label already keeps the rest from
//	          Start), then the task, the container, its snapshot and its
//	          lease are deleted.
//
// The invariant that makes a crash at any point recoverable: a task is
// deleted only when the instance's outcome no longer needs it — its start
// failed, or the caller recorded its exit before calling Remove. So an
// instance found without a task either never started (no started-at label:
// it may be started afresh) or has finished (started-at label, StateFinished:
// never started again; its exit is in the caller's records, or lost). A
// task found stopped without Start's note never ran: containerd stopped it
// because the request that made it was cut short (exit 137 that no
// container process produced), and the instance is reported never started.
//
// Leftovers of an interrupted step are never a permanent error: Create
// removes a snapshot or lease of the same ID that no container holds (a
// never-started container itself is the caller's to Remove: Create does not
// replace a container); Start starts a task an interrupted Start left
// created (never deletes it: the cut-short request may still start it, and
// whichever start comes first runs the container once), and removes the
// shim bundle and runc state a lost task left; Remove finishes what an earlier
// Remove began; SweepLeftovers removes what belongs to no container at all.
//
// Errors are classified for the caller: ErrStartFailed marks a failure of
// the container itself (the OCI runtime could not run it); IsTransient marks
// a failure of the infrastructure (containerd or a shim unreachable, a cut
// connection, leftovers in the way), after which the operation is retried and
// the instance's state read again with Inspect.
package runtime
