package podworker

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// writePayload publishes files in dir the way the kubelet's AtomicWriter
// does, so that a reader never sees half of an update:
//
//	dir/..2025_01_02_03_04_05.123/<files>   one timestamped directory per version
//	dir/..data -> ..2025_01_02_03_04_05.123 swapped by rename(2), atomically
//	dir/<top> -> ..data/<top>               the paths users see, through ..data
//
// A payload equal to the published one (contents and modes) is left alone;
// otherwise a new version is written, ..data is swapped to it, links of
// paths no longer in the payload are removed, and the old version goes.
// changed reports whether a new version was published. Files are
// group-owned by gid when gid ≥ 0 (the pod's fsGroup), and readable by that
// group, as the kubelet's SetVolumeOwnership leaves a read-only volume.
func writePayload(dir string, files map[string]volumeFile, gid int) (changed bool, err error) {
	for path := range files {
		if !isLocalPath(path) || strings.HasPrefix(path, "..") {
			return false, fmt.Errorf("invalid path %q: must be relative, may not contain '..' nor start with '..'", path)
		}
	}
	if gid >= 0 {
		files = withGroupRead(files)
	}
	oldVersion, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if oldVersion != "" && samePayload(filepath.Join(dir, oldVersion), files) {
		return false, linkUserPaths(dir, files)
	}
	version, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(version)
		}
	}()
	if err := os.Chmod(version, 0o755); err != nil {
		return false, err
	}
	for path, f := range files {
		if err := writeFile(version, path, f.content, f.mode, gid); err != nil {
			return false, err
		}
	}
	tmp := filepath.Join(dir, newDataDirName)
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(version), tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataDirName)); err != nil {
		return false, err
	}
	if err := linkUserPaths(dir, files); err != nil {
		return true, err
	}
	if err := removeStaleLinks(dir, files); err != nil {
		return true, err
	}
	return true, removeOldVersions(dir, filepath.Base(version))
}

// readOnlyGroupMask is what the kubelet adds to the files of a read-only
// volume (configMap, secret, projected, downwardAPI) when the pod has an
// fsGroup: the group may read them, whatever defaultMode says.
const readOnlyGroupMask = 0o440

// withGroupRead is files with the fsGroup's read permission added.
func withGroupRead(files map[string]volumeFile) map[string]volumeFile {
	out := make(map[string]volumeFile, len(files))
	for path, f := range files {
		f.mode |= readOnlyGroupMask
		out[path] = f
	}
	return out
}

// removeOldVersions removes every version directory but current: the one
// ..data pointed to before, and any an interrupted write left (a skiffd
// killed between writing a version and swapping ..data to it).
func removeOldVersions(dir, current string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, "..") || name == current {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(dir, name)))
	}
	return errors.Join(errs...)
}

// samePayload reports whether the version directory holds exactly files.
func samePayload(version string, files map[string]volumeFile) bool {
	n := 0
	err := filepath.WalkDir(version, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(version, path)
		want, ok := files[filepath.ToSlash(rel)]
		if !ok {
			return fs.ErrExist
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != want.mode.Perm() {
			return fs.ErrExist
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, []byte(want.content)) {
			return fs.ErrExist
		}
		n++
		return nil
	})
	return err == nil && n == len(files)
}

// topElement is the first element of a payload path: what dir shows.
func topElement(path string) string {
	top, _, _ := strings.Cut(path, "/")
	return top
}

// linkUserPaths makes each payload path's first element a link through ..data.
func linkUserPaths(dir string, files map[string]volumeFile) error {
	for path := range files {
		top := topElement(path)
		link := filepath.Join(dir, top)
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(dataDirName, top), link); err != nil {
			return err
		}
	}
	return nil
}

// removeStaleLinks removes the links of paths the payload no longer has.
func removeStaleLinks(dir string, files map[string]volumeFile) error {
	keep := map[string]bool{}
	for path := range files {
		keep[topElement(path)] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") || keep[name] || e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}
