//go:build failpoints

package failpoint

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// Enabled reports whether this build has failpoints.
const Enabled = true

// armed is the point SKIFF_FAILPOINT names, and the hit that fires it.
var (
	armed string
	nth   int64 = 1
	hits  atomic.Int64
)

func init() {
	armed, nth = parse(os.Getenv(Env))
}

// parse reads "<point>" or "<point>:<n>"; a bad n counts as 1.
func parse(v string) (point string, n int64) {
	point, count, ok := strings.Cut(v, ":")
	n = 1
	if ok {
		if c, err := strconv.ParseInt(count, 10, 64); err == nil && c > 0 {
			n = c
		}
	}
	return point, n
}

// Hit kills the process with SIGKILL if point is the armed failpoint and
// this is its n-th hit. It says so on stderr first, so that a test can
// tell the failpoint from a crash.
func Hit(point string) {
	if point != armed || hits.Add(1) != nth {
		return
	}
	fmt.Fprintf(os.Stderr, "failpoint %s: killing skiffd (pid %d)\n", point, os.Getpid())
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL is not handled: nothing after this runs
}
