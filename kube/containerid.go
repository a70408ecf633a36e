package kube

import "strings"

// containerIDScheme is the runtime part of a container status' containerID
// ("containerd://<id>"), the kubelet's kubecontainer.ContainerID.Type.
const containerIDScheme = "containerd://"

// ContainerID is a containerd container's ID as a container status carries
// it: "containerd://<id>".
func ContainerID(id string) string { return containerIDScheme + id }

// ParseContainerID is the containerd ID inside a container status'
// containerID; ok is false when there is none (empty, or another runtime's).
func ParseContainerID(s string) (id string, ok bool) {
	id, ok = strings.CutPrefix(s, containerIDScheme)
	return id, ok && id != ""
}
