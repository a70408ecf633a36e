package logs

// CONTRACT FILE — the logs helper replaces every panic body with the real
// implementation (splitting into files as it likes), keeping these signatures.

import (
	"context"
	"io"
	"time"
)

// DriverArg is the argument that marks a skiffd invocation as the log
// driver: the shim runs `skiffd log-driver <logpath>` (cio.BinaryIO with
// query {"log-driver": logpath}), with the container's stdout on fd 3,
// stderr on fd 4, and a ready pipe on fd 5.
const DriverArg = "log-driver"

// RunDriver is the log driver's main: it copies fd 3/4 into the CRI-format
// file at path until both close. cmd/skiffd calls it when os.Args[1] == DriverArg.
func RunDriver(path string) error { panic("contract") }

// Path is the log file of one container instance:
// <root>/<namespace>_<pod>_<uid>/<container>/<attempt>.log (as the kubelet lays them out).
func Path(root, namespace, pod, uid, container string, attempt int) string { panic("contract") }

// PodDir is the directory holding all of a pod's logs (removed with the pod).
func PodDir(root, namespace, pod, uid string) string { panic("contract") }

// Options are the /log query options.
type Options struct {
	TailLines  *int64
	LimitBytes *int64
	Since      time.Time // zero = all
	Timestamps bool
}

// Source lists the log files of one container, oldest attempt first, and
// whether more may still come (Follow). Done reports when the container has
// ended for good (no further attempt will be written).
type Follow struct {
	// Next returns the path of the attempt after the current one, waiting
	// until it exists; ok=false when the container ended for good.
	Next func(ctx context.Context, attempt int) (path string, ok bool)
}

// Write writes the content of the given CRI log file to w (text only, or
// "<RFC3339Nano> <text>" with Timestamps), applying opts. With follow != nil
// it keeps streaming new lines, then moves to later attempts through
// follow.Next, until that says ok=false and the current file is drained, or
// ctx ends.
func Write(ctx context.Context, w io.Writer, path string, attempt int, opts Options, follow *Follow) error {
	panic("contract")
}
