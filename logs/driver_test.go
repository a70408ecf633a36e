package logs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// driverEnv makes the test binary act as the log driver for the given path,
// the way `skiff-log-driver log-driver <path>` does.
const driverEnv = "SKIFF_LOGS_TEST_DRIVER"

// TestMain lets the test binary be the log driver: for the re-exec tests
// (driverEnv) and for containerd's shim in integration tests, which runs it
// as `<binary> log-driver <path>` with nothing but CONTAINER_ID and
// CONTAINER_NAMESPACE in its environment.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == DriverArg {
		os.Setenv(driverEnv, os.Args[2])
	}
	if path, ok := os.LookupEnv(driverEnv); ok {
		if err := RunDriver(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// driverProcess is a log driver started the way containerd's shim starts a
// binary logger: stdout and stderr pipes on fds 3 and 4, a readiness pipe on
// fd 5 that the driver closes, environment CONTAINER_ID/CONTAINER_NAMESPACE.
type driverProcess struct {
	cmd          *exec.Cmd
	out, errs    *os.File // the container's ends
	exited       chan struct{}
	waitErr      error
	driverStderr bytes.Buffer
}

func startDriverProcess(t *testing.T, path string) *driverProcess {
	t.Helper()
	outR, outW := pipe(t)
	errR, errW := pipe(t)
	readyR, readyW := pipe(t)
	d := &driverProcess{out: outW, errs: errW, exited: make(chan struct{})}
	d.cmd = exec.Command(os.Args[0], "-test.run=^$")
	d.cmd.Env = append(os.Environ(), driverEnv+"="+path, "CONTAINER_ID=c1", "CONTAINER_NAMESPACE=skiff")
	d.cmd.ExtraFiles = []*os.File{outR, errR, readyW}
	d.cmd.Stderr = &d.driverStderr
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.waitErr = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		d.out.Close()
		d.errs.Close()
		d.cmd.Process.Kill()
		<-d.exited
	})
	outR.Close()
	errR.Close()
	readyW.Close()

	// Like the shim: block until the driver closes its end of the ready pipe.
	if n, err := readyR.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("ready pipe read = %d, %v; want EOF", n, err)
	}
	readyR.Close()
	select {
	case <-d.exited:
		t.Fatalf("driver exited at start: %v\n%s", d.waitErr, d.driverStderr.String())
	default:
	}
	return d
}

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// signalGroup sends sig to the driver's process group, as a terminal or the
// shim's group would.
func (d *driverProcess) signalGroup(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(-d.cmd.Process.Pid, sig); err != nil {
		t.Fatal(err)
	}
}

func (d *driverProcess) write(t *testing.T, f *os.File, text string) {
	t.Helper()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

func isLocked(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gone, err := isWriterGone(f)
	if err != nil {
		t.Fatal(err)
	}
	return !gone
}

func readStreams(t *testing.T, path string) map[stream][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return streamTexts(t, string(b))
}

func TestDriverProcessExitsAtEOF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "default_p_uid", "c", "0.log")
	d := startDriverProcess(t, path)
	if !isLocked(t, path) {
		t.Fatal("driver is ready but holds no lock on its file")
	}
	d.write(t, d.out, "hello\nno newline")
	d.write(t, d.errs, "oops\n")
	d.out.Close()
	d.errs.Close()
	<-d.exited
	if d.waitErr != nil {
		t.Fatalf("driver exit: %v\n%s", d.waitErr, d.driverStderr.String())
	}
	want := map[stream][]string{stdout: {"F:hello", "P:no newline"}, stderr: {"F:oops"}}
	if diff := cmp.Diff(want, readStreams(t, path)); diff != "" {
		t.Errorf("entries (-want,+got):\n%s", diff)
	}
	if isLocked(t, path) {
		t.Error("lock still held after the driver exited")
	}
}

func TestDriverProcessSignals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	d := startDriverProcess(t, path)
	d.write(t, d.out, "before\n")
	waitForFile(t, path, "before")

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		d.signalGroup(t, sig)
	}
	d.write(t, d.errs, "after signals\n")
	waitForFile(t, path, "after signals")
	d.write(t, d.out, "still here\n")
	waitForFile(t, path, "still here")
	select {
	case <-d.exited:
		t.Fatalf("driver exited on a signal: %v", d.waitErr)
	default:
	}

	// Lines written are on disk even when the driver dies without a chance
	// to flush anything.
	d.signalGroup(t, syscall.SIGKILL)
	<-d.exited
	want := map[stream][]string{stdout: {"F:before", "F:still here"}, stderr: {"F:after signals"}}
	if diff := cmp.Diff(want, readStreams(t, path)); diff != "" {
		t.Errorf("entries (-want,+got):\n%s", diff)
	}
	if isLocked(t, path) {
		t.Error("lock still held after the driver was killed")
	}
}
