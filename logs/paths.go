package logs

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// Path is the log file of one container instance:
// <root>/<namespace>_<pod>_<uid>/<container>/<attempt>.log.
//
// NOTE: this is the kubelet's layout under /var/log/pods, where attempt is
// the container's restartCount; rotated files lie beside it as
// <attempt>.log.<timestamp>.
func Path(root, namespace, pod, uid, container string, attempt int) string {
	return filepath.Join(PodDir(root, namespace, pod, uid), container, strconv.Itoa(attempt)+".log")
}

// PodDir is the directory holding all of a pod's logs (removed with the pod).
func PodDir(root, namespace, pod, uid string) string {
	return filepath.Join(root, fmt.Sprintf("%s_%s_%s", namespace, pod, uid))
}
