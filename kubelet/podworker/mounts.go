package podworker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/runtime"
)

// volumeMounts turns the container's volumeMounts into bind mounts of the
// pod's volumes, as the kubelet's makeMounts does: subPath (or subPathExpr
// expanded with the container's env) is created inside the volume and may
// not lead out of it; readOnly, and volumes that are always read-only,
// mount "ro".
func volumeMounts(c *corev1.Container, vols map[string]podVolume, lookup func(string) (string, bool)) ([]runtime.Mount, error) {
	var out []runtime.Mount
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, &configError{fmt.Sprintf("cannot find volume %q to mount into container %q", vm.Name, c.Name)}
		}
		src := v.path
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = expand(vm.SubPathExpr, lookup)
		}
		if sub != "" {
			if !isLocalPath(sub) {
				return nil, &configError{fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q", vm.Name, c.Name)}
			}
			var err error
			if src, err = prepareSubPath(v.path, sub); err != nil {
				return nil, &configError{fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q: %v", vm.Name, c.Name, err)}
			}
		}
		m := runtime.Mount{Source: src, Destination: vm.MountPath, Type: "bind"}
		if vm.ReadOnly || v.readOnly {
			m.Options = []string{"ro"}
		}
		out = append(out, m)
	}
	return out, nil
}

// prepareSubPath returns the host path of sub inside the volume at root,
// creating missing directories with the mode of the volume's root (as the
// kubelet does, so that an fsGroup can write there) and refusing a path
// that symlinks lead out of the volume.
func prepareSubPath(root, sub string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(realRoot)
	if err != nil {
		return "", err
	}
	cur := realRoot
	for _, elem := range strings.Split(filepath.Clean(sub), "/") {
		next := filepath.Join(cur, elem)
		switch _, err := os.Lstat(next); {
		case errors.Is(err, os.ErrNotExist):
			if err := os.Mkdir(next, fi.Mode().Perm()); err != nil {
				return "", err
			}
			if err := os.Chmod(next, fi.Mode()&(os.ModePerm|os.ModeSetgid)); err != nil {
				return "", err
			}
		case err != nil:
			return "", err
		}
		resolved, err := filepath.EvalSymlinks(next)
		if err != nil {
			return "", err
		}
		if !isWithin(resolved, realRoot) {
			return "", fmt.Errorf("subpath %q not within volume path %q", resolved, realRoot)
		}
		cur = resolved
	}
	return cur, nil
}

// isWithin reports whether path is base or below it.
func isWithin(path, base string) bool {
	rel, err := filepath.Rel(base, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
