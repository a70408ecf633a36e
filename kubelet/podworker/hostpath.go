package podworker

import (
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
)

// checkHostPath checks (and for the *OrCreate types, creates) a hostPath
// volume's path the way the kubelet's hostPath plugin does, with its
// messages. An unset type checks nothing; the path is created as a
// directory if missing, as containerd's CRI does for a bind source.
func checkHostPath(path string, typ *corev1.HostPathType) error {
	t := corev1.HostPathUnset
	if typ != nil {
		t = *typ
	}
	fi, statErr := os.Stat(path)
	exists := statErr == nil
	mode := os.ModeIrregular // nothing there: no type matches
	if exists {
		mode = fi.Mode()
	}
	switch t {
	case corev1.HostPathUnset:
		if !exists {
			return os.MkdirAll(path, 0o755)
		}
		return nil
	case corev1.HostPathDirectoryOrCreate:
		if !exists {
			return makeDir(path)
		}
		fallthrough
	case corev1.HostPathDirectory:
		if !mode.IsDir() {
			return fmt.Errorf("hostPath type check failed: %s is not a directory", path)
		}
	case corev1.HostPathFileOrCreate:
		if !exists {
			return makeFile(path)
		}
		fallthrough
	case corev1.HostPathFile:
		if !mode.IsRegular() {
			return fmt.Errorf("hostPath type check failed: %s is not a file", path)
		}
	case corev1.HostPathSocket:
		if mode&os.ModeSocket == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a socket file", path)
		}
	case corev1.HostPathCharDev:
		if mode&os.ModeCharDevice == 0 || mode&os.ModeDevice == 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a character device", path)
		}
	case corev1.HostPathBlockDev:
		if mode&os.ModeDevice == 0 || mode&os.ModeCharDevice != 0 {
			return fmt.Errorf("hostPath type check failed: %s is not a block device", path)
		}
	default:
		return fmt.Errorf("%s is an invalid volume type", t)
	}
	return nil
}

// makeDir creates a DirectoryOrCreate path as the kubelet does: 0755.
func makeDir(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	return nil
}

// makeFile creates a FileOrCreate path as the kubelet does: an empty 0644
// file.
//
// NOTE: as documented for Kubernetes, FileOrCreate does not create the
// file's parent directory: the pod cannot start if it is missing.
func makeFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}
