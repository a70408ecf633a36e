package podworker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of size bytes on dir, unless one is there
// already (set up by an earlier run of skiffd).
func mountTmpfs(dir string, size int64) error {
	mounted, err := isMountPoint(dir)
	if err != nil || mounted {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+strconv.FormatInt(size, 10)); err != nil {
		return fmt.Errorf("mounting tmpfs at %s: %w", dir, err)
	}
	return nil
}

// unmountAll unmounts every mount at or below dir, the deepest first, so
// that removing dir afterwards never reaches into a mount (a Secret's
// tmpfs, a memory-backed emptyDir) nor leaves one behind.
func unmountAll(dir string) error {
	mounts, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points at or below dir, deepest first, from
// /proc/self/mountinfo.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountsUnder(f, dir)
}

// parseMountsUnder reads mountinfo lines from r and returns the mount points
// at or below dir, deepest first.
func parseMountsUnder(r io.Reader, dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// Field 5 is the mount point, with spaces and the like octal-escaped.
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// NOTE: a path mounted over twice is listed twice: each unmount
	// removes one layer.
	slices.SortStableFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return out, nil
}

// unescapeMountPath undoes mountinfo's \ooo escapes.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
