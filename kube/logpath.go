package kube

import (
	"fmt"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// ContainerLogPath is the log file of one instance of a pod's container
// under root: <root>/<namespace>_<pod>_<uid>/<container>/<attempt>.log,
// where attempt is the instance's restartCount.
//
// NOTE: this is the kubelet's layout under /var/log/pods
// (BuildContainerLogsDirectory); rotated files lie beside it as
// <attempt>.log.<timestamp>.
func ContainerLogPath(root string, pod *corev1.Pod, container string, attempt int) string {
	return filepath.Join(PodLogDir(root, pod), container, strconv.Itoa(attempt)+".log")
}

// PodLogDir is the directory under root holding all of a pod's logs,
// removed with the pod.
func PodLogDir(root string, pod *corev1.Pod) string {
	return filepath.Join(root, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID))
}
