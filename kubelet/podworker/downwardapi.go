package podworker

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The downward API volume's files are published atomically, as the
// kubelet's AtomicWriter does: written into a fresh timestamped directory,
// which the ..data symlink then points to; each file's first path element
// is a symlink through ..data.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// volumeFile is one file of a downwardAPI volume.
type volumeFile struct {
	content string
	mode    os.FileMode
}

// downwardAPIFiles renders the items of a downwardAPI volume by path, with
// their mode (the item's, else defaultMode, else 0644).
func downwardAPIFiles(pod *corev1.Pod, src *corev1.DownwardAPIVolumeSource, node nodeInfo) (map[string]volumeFile, error) {
	files := map[string]volumeFile{}
	mode := os.FileMode(corev1.DownwardAPIVolumeSourceDefaultMode)
	if src.DefaultMode != nil {
		mode = os.FileMode(*src.DefaultMode)
	}
	for _, item := range src.Items {
		var value string
		var err error
		switch {
		case item.FieldRef != nil:
			value, err = volumeFieldValue(pod, item.FieldRef.FieldPath, node)
		case item.ResourceFieldRef != nil:
			c := findContainer(pod, item.ResourceFieldRef.ContainerName)
			if c == nil {
				return nil, fmt.Errorf("container %q not found for resourceFieldRef", item.ResourceFieldRef.ContainerName)
			}
			value, err = resourceFieldValue(pod, c, item.ResourceFieldRef, node)
		}
		if err != nil {
			return nil, err
		}
		f := volumeFile{content: value, mode: mode}
		if item.Mode != nil {
			f.mode = os.FileMode(*item.Mode)
		}
		files[item.Path] = f
	}
	return files, nil
}

// volumeFieldValue resolves the field paths a downwardAPI volume supports:
// those of env, and the whole labels and annotations as key="value" lines.
func volumeFieldValue(pod *corev1.Pod, path string, node nodeInfo) (string, error) {
	switch path {
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	return fieldRefValue(pod, path, node)
}

// formatMap is the kubelet's fieldpath.FormatMap: sorted key="value" lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// writeAtomic publishes files in dir (see writePayload), group-owned by
// gid when gid ≥ 0.
func writeAtomic(dir string, files map[string]volumeFile, gid int) error {
	_, err := writePayload(dir, files, gid)
	return err
}

func writeFile(root, path, content string, mode os.FileMode, gid int) error {
	full := filepath.Join(root, path)
	if !isLocalPath(path) {
		return fmt.Errorf("invalid path %q: must be relative and may not contain '..'", path)
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		return err
	}
	if err := os.Chmod(full, mode); err != nil {
		return err
	}
	if gid >= 0 {
		return os.Chown(full, -1, gid)
	}
	return nil
}

// isLocalPath reports whether p is relative and does not climb out with "..".
func isLocalPath(p string) bool {
	if p == "" || filepath.IsAbs(p) {
		return false
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == ".." {
			return false
		}
	}
	return true
}

// findContainer finds a container (regular or init) of pod by name.
func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
