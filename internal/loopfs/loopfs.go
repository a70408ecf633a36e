// Package loopfs mounts a small ext4 filesystem from a file on a loop
// device, for tests of what happens when a data disk fills up. It needs
// root, a kernel with loop devices, mount and mkfs.ext4.
//
// NOTE: ext4 on a loop device rather than tmpfs with size=: it is the
// filesystem a data disk really has (journal, delayed allocation, block
// groups, sparse files that bbolt grows by truncate and fills by pwrite),
// so ENOSPC comes from the same places as on the node. It is made without
// the 5% reserved for root (-m 0): skiffd runs as root, and on a disk
// with a reserve "full" would mean full for everyone but skiffd.
package loopfs

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// FS is a mounted filesystem; Dir is its mount point.
type FS struct {
	Dir   string
	image string
}

// fillName is the file that Fill grows and Free removes.
const fillName = ".loopfs-fill"

// Mount makes an ext4 filesystem of size bytes and mounts it on a new
// directory; the test's cleanup unmounts it and removes the image. A
// missing tool or permission fails the test: it is a prerequisite.
func Mount(t testing.TB, size int64) *FS {
	t.Helper()
	base, err := os.MkdirTemp("", "loopfs")
	if err != nil {
		t.Fatal(err)
	}
	fs := &FS{Dir: filepath.Join(base, "mnt"), image: filepath.Join(base, "disk.img")}
	t.Cleanup(func() { fs.unmount(t); os.RemoveAll(base) })
	if err := os.Mkdir(fs.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fs.image, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(fs.image, size); err != nil {
		t.Fatal(err)
	}
	run(t, "mkfs.ext4", "-q", "-F", "-m", "0", "-L", "loopfs", fs.image)
	run(t, "mount", "-o", "loop", fs.image, fs.Dir)
	return fs
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// unmount unmounts the filesystem, lazily if something still holds it (a
// process the test left behind), which also frees the loop device.
func (fs *FS) unmount(t testing.TB) {
	for range 50 {
		err := syscall.Unmount(fs.Dir, 0)
		if err == nil || errors.Is(err, syscall.EINVAL) {
			return // unmounted (EINVAL: it was not mounted)
		}
		if !errors.Is(err, syscall.EBUSY) {
			t.Logf("unmounting %s: %v", fs.Dir, err)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := syscall.Unmount(fs.Dir, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
		t.Errorf("unmounting %s: %v", fs.Dir, err)
	}
}

// Fill writes a file until the filesystem refuses more data (ENOSPC), so
// that every later write that needs a new block fails.
func (fs *FS) Fill(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(fs.Dir, fillName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("filling %s: %v", fs.Dir, err)
	}
	defer f.Close()
	for _, chunk := range []int{1 << 20, 64 << 10, 4 << 10, 1 << 10, 1} {
		if err := writeUntilFull(f, chunk); err != nil {
			t.Fatalf("filling %s: %v", fs.Dir, err)
		}
	}
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling %s: %v", fs.Dir, err)
	}
}

// writeUntilFull appends chunks of size bytes until ENOSPC.
func writeUntilFull(w io.Writer, size int) error {
	buf := make([]byte, size)
	for {
		_, err := w.Write(buf)
		if errors.Is(err, syscall.ENOSPC) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Free removes what Fill wrote.
func (fs *FS) Free(t testing.TB) {
	t.Helper()
	if err := os.Remove(filepath.Join(fs.Dir, fillName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("freeing %s: %v", fs.Dir, err)
	}
}
