package db

import (
	"bufio"
	"fmt"
	"golang.org/x/sys/unix"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestWithMappingDropsPages: once the store is read whole, its file's pages are
// resident in the process's mapping; memtrim.Range on WithMapping's range
// drops them, and what is read afterwards is read whole and right.
func TestWithMappingDropsPages(t *testing.T) {
	s, path := openStore(t)
	const pods, pad = 400, 16 << 10
	for i := range pods {
		pod := newPod("default", fmt.Sprintf("p-%d", i), nil)
		pod.Annotations = map[string]string{"pad": strings.Repeat(strconv.Itoa(i%10), pad)}
		mustCreate(t, s, Pods, pod)
	}
	listAll := func() {
		t.Helper()
		stored, _, err := s.ListStoredAt(Pods, "", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != pods {
			t.Fatalf("listed %d pods, want %d", len(stored), pods)
		}
		for _, st := range stored {
			obj, err := st.Decode(Pods)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(obj.GetAnnotations()["pad"]); n != pad {
				t.Fatalf("%s: pad of %d bytes, want %d", obj.GetName(), n, pad)
			}
		}
	}
	listAll()
	before := mappedRSS(t, path)
	if before < pods*pad/2 {
		t.Fatalf("the store's mapping holds %d bytes resident after a list of %d bytes: the test measures nothing", before, pods*pad)
	}
	size, err := s.WithMapping(dropRange)
	if err != nil {
		t.Fatal(err)
	}
	if size < pods*pad {
		t.Fatalf("WithMapping covered %d bytes, the objects alone take %d", size, pods*pad)
	}
	after := mappedRSS(t, path)
	if after > before/10 {
		t.Fatalf("the store's mapping holds %d bytes resident after the drop, %d before", after, before)
	}
	listAll()
	if again := mappedRSS(t, path); again < pods*pad/2 {
		t.Fatalf("a list after the drop left %d bytes resident: it did not read through the mapping", again)
	}
	mustCreate(t, s, Pods, newPod("default", "after", nil))
	mustGetPod(t, s, "default", "after")
}

// dropRange is memtrim.Range, which db may not import (it is a leaf).
func dropRange(addr, length uintptr) error {
	_, _, errno := unix.Syscall(unix.SYS_MADVISE, addr, length, unix.MADV_DONTNEED)
	if errno != 0 {
		return errno
	}
	return nil
}

// mappedRSS is the resident size of the process's mappings of the file at path.
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var total int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if !strings.HasSuffix(fields[0], ":") {
			in = len(fields) >= 6 && fields[5] == path
			continue
		}
		if in && fields[0] == "Rss:" && len(fields) >= 2 {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			total += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return total
}
