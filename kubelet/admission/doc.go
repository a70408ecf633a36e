// Package admission decides which pods the node lets in, in the roles of
// kube-scheduler's NodeResourcesFit filter and the kubelet's admission for
// skiff's one node: a pod's requests (as resourcehelper.PodRequests counts
// them: regular containers and sidecars add up, init containers take the
// larger, overhead on top) must fit the node's allocatable beside the pods
// already admitted and not finished, and at most the node's pod count run
// at once. Pods wait their turn in creation order (Scheduler), and a pod
// that waits says why in the scheduler's words (UnschedulableMessage).
//
// It is pure: no store, no runtime, no clock. The pod worker feeds it (Bind
// at recovery, Enqueue for a new pod, Release when a pod finishes or goes).
package admission
