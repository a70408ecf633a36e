// Package memtrim lets a process give up the mappings of file pages it
// touched once and may not touch again: its executable's pages that only
// its start-up needed, or a mapped file read whole once.
//
// A Go program's package initialisation touches code and read-only data
// all over its binary once (skiffd's: every Kubernetes package registers
// its types, builds its tables), and the kernel maps each page touched
// with its neighbours (fault-around): an idle skiffd held 33 MB of its
// 40 MB of code and read-only data mapped, of which its steady work (the
// node's heartbeat, the sweeps, the controllers' resyncs) uses about half.
package memtrim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ExecutableReadOnly drops the process's mappings of its executable's
// read-only segments (code, read-only data) with MADV_DONTNEED and returns
// how many bytes of them were resident. The pages stay in the page cache;
// those used again are mapped back at their next touch (a minor fault).
// Segments holding pages of the process's own (a relocated one, say) are
// left alone: dropping those would lose them.
func ExecutableReadOnly() (released int64, err error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("finding the executable: %w", err)
	}
	segments, err := readOnlySegments(exe)
	if err != nil {
		return 0, err
	}
	for _, s := range segments {
		if err := Range(s.start, s.end-s.start); err != nil {
			return released, err
		}
		released += s.rss
	}
	return released, nil
}

// Range drops the process's mappings of the pages in [addr, addr+length)
// with MADV_DONTNEED. The range must lie in shared or read-only file
// mappings: their pages stay in the page cache and come back at their next
// touch, while a private page of the process's own would be lost.
func Range(addr, length uintptr) error {
	if length == 0 {
		return nil
	}
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, length, unix.MADV_DONTNEED); errno != 0 {
		return fmt.Errorf("madvise %x-%x: %w", addr, addr+length, errno)
	}
	return nil
}

// segment is a mapping of the executable: its address range and resident bytes.
type segment struct {
	start, end uintptr
	rss        int64
}

// readOnlySegments lists, from /proc/self/smaps, the private read-only
// mappings of the file exe that hold no page of the process's own.
func readOnlySegments(exe string) ([]segment, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		found []segment
		cur   *segment
		anon  int64
	)
	flush := func() {
		if cur != nil && anon == 0 {
			found = append(found, *cur)
		}
		cur, anon = nil, 0
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if addr, ok := strings.CutSuffix(fields[0], ":"); ok {
			// NOTE: a field line ("Rss: 12 kB") of the current mapping.
			kb := int64(0)
			if len(fields) >= 2 {
				kb, _ = strconv.ParseInt(fields[1], 10, 64)
			}
			switch addr {
			case "Rss":
				if cur != nil {
					cur.rss = kb << 10
				}
			case "Anonymous":
				anon = kb
			}
			continue
		}
		flush()
		// A mapping's header: start-end perms offset dev inode path.
		if len(fields) < 6 || strings.Join(fields[5:], " ") != exe || (fields[1] != "r-xp" && fields[1] != "r--p") {
			continue
		}
		start, end, ok := strings.Cut(fields[0], "-")
		s, err1 := strconv.ParseUint(start, 16, 64)
		e, err2 := strconv.ParseUint(end, 16, 64)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("reading /proc/self/smaps: %q", line)
		}
		cur = &segment{start: uintptr(s), end: uintptr(e)}
	}
	flush()
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading /proc/self/smaps: %w", err)
	}
	return found, nil
}
