// Package podworker is the part of the kubelet that runs pods: it runs the
// Pods of this node through the container runtime and writes their status.
//
// # Shape
//
//	Manager (manager.go)   follows the store's pods on the controller skeleton
//	                       (daemon/controller): its first list is the recovery,
//	                       a broken watch resumes or relists without another
//	                       look at containerd; one worker per pod UID; the sweep
//	  └─ worker (worker.go) one pod: admission, volumes, sandbox, then its
//	       │                 containers in order (order.go), status writes
//	       └─ containerRun   one container through its instances (container.go):
//	            │              image, create, start, wait, restart with back-off,
//	            │              stop with grace and escalation, probes (prober.go)
//	            └─ instance   (pod UID, container, attempt) in containerd (instance.go)
//
// Which pods the node lets in, and in what order, is package
// kubelet/admission's, and how a probe's results become its verdict package
// kubelet/prober's (both pure); prober.go runs the probes
// (probe_handlers.go: exec, HTTP, TCP, gRPC) and acts on the verdicts. The
// pure parts here, table-tested without containerd, sit in files of their
// own: sysctl.go, conditions.go and status.go (what the status says),
// backoff.go, deadline.go, resources.go (cgroup figures), security.go (the
// effective security context), expand.go (env expansion), and convert.go's
// translateContainer: a container's runtime config as a pure function of the
// pod, the container and what the worker gathered for it (containerInputs:
// the node's facts, the resolved env, the prepared mounts, the sandbox, the
// image), as the kubelet's GenerateRunContainerOptions prepares what
// generateContainerConfig translates. The lifecycle itself (create, start,
// postStart and preStop hooks (lifecycle.go), exit, restart, stop,
// recover, deadline, probes) is unit-tested in
// lifecycle_test.go against a scripted runtime and an injected clock.
//
// Volumes (volumes*.go, atomicwriter.go, downwardapi.go, hostpath.go,
// tmpfs.go) are laid out per pod UID under Config.VolumeRoot as the kubelet
// lays them out; ConfigMaps and Secrets are read through sources.go, which
// wakes the pods that wait for one.
//
// # Crash consistency
//
// It rests on one invariant (instance.go, and package runtime's doc for
// containerd's side): what the worker does with a container instance
// follows from durable facts alone — containerd's record of the container
// and its task, and the store's status — so an instance whose exit the
// store holds, or that started, is never started again, every exit
// containerd reports is recorded once before the instance is removed, and
// an infrastructure failure (containerd restarting) only delays the pod.
// Cleanup converges (sweep.go): removals are retried until done and a
// periodic sweep removes what belongs to no live pod instance.
//
// # Lifetimes
//
// A pod deleted stops its containers (preStop, grace, SIGKILL); the daemon
// ending leaves them running for the next skiffd to adopt: the two never
// mix (the Manager's context is the daemon's, a stop's grace is the pod's).
package podworker
