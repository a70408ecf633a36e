package kubelet

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// What one running container costs the node besides its own processes,
// measured on Debian 12 with containerd 1.6: its shim has 11–12 threads
// and 2.7 MiB of anonymous memory, its log driver 4 threads and 0.6 MiB
// (skiff-log-driver; when skiffd was its own log driver, 5–6 threads and
// 4.5 MiB, which these figures were rounded up from). Rounded up, with
// room for runc while it starts the container and for the container's
// first process.
const (
	pidsPerContainer   = 32
	memoryPerContainer = 16 << 20
)

// DefaultMaxContainers derives --max-containers from the machine: half of
// the PIDs it allows (the rest is for the containers' own processes and
// everything else) and a quarter of its memory, at the cost of one
// container above. why says how it was found, for the log.
func DefaultMaxContainers(memory int64) (n int, why string) {
	pids, pidWhy := pidLimit()
	byPIDs := pids / 2 / pidsPerContainer
	byMemory := memory / 4 / memoryPerContainer
	n = int(max(1, min(byPIDs, byMemory)))
	return n, fmt.Sprintf("%d PIDs (%s) allow %d, %d MiB of memory %d", pids, pidWhy, byPIDs, memory>>20, byMemory)
}

// pidLimit is the most PIDs (threads included) the machine lets skiffd's
// containers have: the least of kernel.pid_max, kernel.threads-max and the
// pids cgroup limit skiffd runs under.
func pidLimit() (int64, string) {
	limit, why := int64(math.MaxInt64), ""
	consider := func(n int64, name string) {
		if n > 0 && n < limit {
			limit, why = n, name
		}
	}
	for _, f := range []struct{ path, name string }{
		{"/proc/sys/kernel/pid_max", "kernel.pid_max"},
		{"/proc/sys/kernel/threads-max", "kernel.threads-max"},
	} {
		if n, err := readInt(f.path); err == nil {
			consider(n, f.name)
		}
	}
	if n, path, ok := cgroupPIDsMax("/proc/self/cgroup", "/sys/fs/cgroup"); ok {
		consider(n, path)
	}
	if why == "" {
		return 32768, "the kernel's default pid_max"
	}
	return limit, why
}

// cgroupPIDsMax is the lowest pids.max on the way from the cgroup of the
// process (as procCgroup lists it, v1 or v2) up to the root; ok is false
// without a limit.
func cgroupPIDsMax(procCgroup, root string) (limit int64, path string, ok bool) {
	f, err := os.Open(procCgroup)
	if err != nil {
		return 0, "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path; v2 is "0::path".
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir string
		switch {
		case parts[1] == "" && parts[0] == "0":
			dir = filepath.Join(root, parts[2])
		case hasController(parts[1], "pids"):
			dir = filepath.Join(root, "pids", parts[2])
		default:
			continue
		}
		for d := dir; strings.HasPrefix(d, root); d = filepath.Dir(d) {
			n, err := readInt(filepath.Join(d, "pids.max")) // "max" does not parse: no limit
			if err == nil && (!ok || n < limit) {
				limit, path, ok = n, filepath.Join(d, "pids.max"), true
			}
			if d == root {
				break
			}
		}
	}
	return limit, path, ok
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
