package logs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// DriverBinary is the log driver's executable (cmd/skiff-log-driver),
// built and installed beside skiffd, which looks for it there.
const DriverBinary = "skiff-log-driver"

// DriverArg is the first argument of a log driver invocation: the shim runs
// `skiff-log-driver log-driver <arg>` (cio.BinaryIO with query
// {"log-driver": arg}, arg from Rotation.Arg), with the container's stdout on
// fd 3, stderr on fd 4, and a ready pipe on fd 5. Leftover sweeps know log
// drivers by it.
const DriverArg = "log-driver"

// The file descriptors containerd's shim hands to a binary logger
// (pkg/process NewBinaryIO: cmd.ExtraFiles = stdout, stderr, ready).
const (
	stdoutFD = 3
	stderrFD = 4
	readyFD  = 5
)

// RunDriver is the log driver's main: it copies fd 3/4 into the CRI-format
// file named by arg (an absolute path, or Rotation.Arg's file URL to rotate
// it) until both close. It is cmd/skiff-log-driver's work.
//
// It creates the file (0640, parents 0750) and holds an exclusive flock on
// its current file until it returns, closes fd 5 once it is ready to read
// (the shim waits for that before starting the container), and ignores
// SIGINT, SIGTERM and SIGHUP. A nil error means both streams reached EOF and
// every entry was written.
func RunDriver(arg string) error {
	path, rot, err := ParseDriverArg(arg)
	if err != nil {
		os.NewFile(readyFD, "ready").Close()
		return err
	}
	// NOTE: the shim sends SIGTERM when it closes the container's IO and
	// SIGKILLs 12s later; signals sent to the process group must not cut the
	// log short either. The driver ends when its pipes reach EOF.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)

	out := os.NewFile(stdoutFD, "stdout")
	errs := os.NewFile(stderrFD, "stderr")
	ready := os.NewFile(readyFD, "ready")
	defer out.Close()
	defer errs.Close()
	return runDriver(path, rot, out, errs, ready, time.Now)
}

// runDriver is RunDriver on explicit streams and clock.
func runDriver(path string, rot Rotation, out, errs io.Reader, ready io.Closer, now func() time.Time) error {
	lf, err := openLogFile(path, rot, now)
	if err != nil {
		ready.Close()
		return err
	}
	defer lf.close()
	if err := ready.Close(); err != nil {
		return fmt.Errorf("signalling readiness: %w", err)
	}

	ew := newEntryWriter(lf, now)
	drops := newDropRecorder(path)
	defer drops.close()
	ew.onDrop = drops.record
	var wg sync.WaitGroup
	var copyErrs [numStreams]error
	for s, r := range map[stream]io.Reader{stdout: out, stderr: errs} {
		wg.Go(func() {
			copyErrs[s] = copyStream(r, s, ew)
			ew.endStream(s)
		})
	}
	wg.Wait()
	return errors.Join(copyErrs[stdout], copyErrs[stderr], ew.firstErr(), drops.err)
}

// dropRecorder keeps the dropped-lines record of the driver's log up to
// date. It opens the record when the first line is dropped (Prepare has
// usually made it already).
type dropRecorder struct {
	path string
	rec  *droppedRecord
	err  error // the first failure to record
}

func newDropRecorder(path string) *dropRecorder { return &dropRecorder{path: path} }

// record writes the count (under the entryWriter's lock).
func (d *dropRecorder) record(lines int64, cause error) {
	var err error
	if d.rec == nil {
		d.rec, err = openDroppedRecord(d.path)
	}
	if err == nil {
		msg := ""
		if cause != nil {
			msg = cause.Error()
		}
		err = d.rec.set(lines, msg)
	}
	if err != nil && d.err == nil {
		// NOTE: the shim keeps the driver's stderr; the count is lost.
		d.err = fmt.Errorf("%d log lines dropped: %w", lines, err)
		fmt.Fprintln(os.Stderr, d.err)
	}
}

func (d *dropRecorder) close() {
	if d.rec != nil {
		d.rec.close()
	}
}
