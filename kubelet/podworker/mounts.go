package podworker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"

	"github.com/skiff-sh/skiff/runtime"
)

// volumeMounts turns the container's volumeMounts into bind mounts of the
// pod's volumes, as the kubelet's makeMounts does: subPath (or subPathExpr
// expanded with the container's env, see mountSubPath) is created inside
// the volume and may not lead out of it; readOnly, and volumes that are
// always read-only, mount "ro".
func volumeMounts(c *corev1.Container, vols map[string]podVolume, lookup func(string) (string, bool)) ([]runtime.Mount, error) {
	var out []runtime.Mount
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, &configError{fmt.Sprintf("cannot find volume %q to mount into container %q", vm.Name, c.Name)}
		}
		sub, err := mountSubPath(vm, lookup)
		if err != nil {
			return nil, err
		}
		src := v.path
		if sub != "" {
			if src, err = prepareSubPath(v.path, sub); err != nil {
				// NOTE: as the kubelet, the detail (host paths) is logged,
				// not shown in the pod's status.
				logrus.WithError(err).WithFields(logrus.Fields{"container": c.Name, "volumeMount": vm.Name}).Warn("preparing subPath")
				var spe subPathError
				errors.As(err, &spe)
				return nil, spe.forMount(vm.Name, c.Name)
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

// mountSubPath is the path inside the volume that vm mounts: its subPath,
// or its subPathExpr expanded with the container's environment. As the
// kubelet's makeMounts, an expression referring to a variable that is
// undefined or empty fails ("missing value for A, B"), and so does a path
// that is absolute or climbs out with "..". These are CreateContainerConfig
// errors, retried: the variables may come from labels or annotations that
// change.
func mountSubPath(vm corev1.VolumeMount, lookup func(string) (string, bool)) (string, error) {
	sub := vm.SubPath
	if vm.SubPathExpr != "" {
		var missing []string
		sub = expand(vm.SubPathExpr, func(name string) (string, bool) {
			v, ok := lookup(name)
			if !ok || v == "" {
				missing = append(missing, name)
			}
			return v, true
		})
		if len(missing) > 0 {
			slices.Sort(missing)
			return "", &configError{"missing value for " + strings.Join(slices.Compact(missing), ", ")}
		}
	}
	switch {
	case sub == "":
		return "", nil
	case filepath.IsAbs(sub):
		return "", &configError{fmt.Sprintf("error SubPath `%s` must not be an absolute path", sub)}
	case slices.Contains(strings.Split(sub, "/"), ".."):
		return "", &configError{fmt.Sprintf("unable to provision SubPath `%s`: must not contain '..'", sub)}
	}
	return sub, nil
}

// subPathError is why prepareSubPath failed: creating a missing directory
// (created) or resolving the path inside the volume.
type subPathError struct {
	err     error
	created bool
}

func (e subPathError) Error() string { return e.err.Error() }
func (e subPathError) Unwrap() error { return e.err }

// forMount is the kubelet's message for the failure, without the detail.
func (e subPathError) forMount(mount, container string) error {
	if e.created {
		return &configError{fmt.Sprintf("failed to create subPath directory for volumeMount %q of container %q", mount, container)}
	}
	return &configError{fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q", mount, container)}
}

// prepareSubPath returns the host path of sub inside the volume at root,
// creating missing directories with the mode of the volume's root (as the
// kubelet does, so that an fsGroup can write there) and refusing a path
// that symlinks lead out of the volume. Its errors are subPathErrors.
func prepareSubPath(root, sub string) (string, error) {
	_, err := os.Stat(filepath.Join(root, sub))
	missing := errors.Is(err, os.ErrNotExist)
	path, err := walkSubPath(root, sub)
	if err != nil {
		return "", subPathError{err: err, created: missing}
	}
	return path, nil
}

// walkSubPath resolves sub inside root element by element, creating what
// is missing (see prepareSubPath).
func walkSubPath(root, sub string) (string, error) {
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
