package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/mount"
	"github.com/containerd/errdefs"
)

// runcRoot is where the runc shim keeps runc's state, per namespace: its
// default, as skiff passes no runtime options.
const runcRoot = "/run/containerd/runc"

// bundleRoot is where containerd's v2 runtime keeps the shim bundles of
// skiff's namespace: <state>/io.containerd.runtime.v2.task/<ns>/<id>.
func (r *Runtime) bundleRoot() string {
	return filepath.Join(r.state, "io.containerd.runtime.v2.task", r.ns)
}

// clearTaskLeftovers removes what a task of id that containerd no longer
// lists left behind: its shim process, runc's state (which kills what still
// runs of the container), the rootfs mount, the shim socket and the bundle
// with its work directory — what containerd itself does for a dead shim
// when it restarts. The caller holds id's lock and has seen no task.
// Unless scan is set, /proc is only searched for a shim when something of
// the task is on disk (a shim that outlived its bundle is the sweep's).
//
// Leftovers younger than minLeftoverAge are not touched (errLeftoverYoung):
// a request of an earlier skiffd, cut short by its death, may still be
// making that task in containerd, and tearing its shim down under it would
// fail the new one's start as if the container had failed.
func (r *Runtime) clearTaskLeftovers(ctx context.Context, id string, scan bool) error {
	var errs []error
	if !scan && !r.hasTaskLeftovers(id) {
		return nil
	}
	if age, ok := r.taskLeftoverAge(id); ok && age < minLeftoverAge {
		return fmt.Errorf("a task of %q is still being made or torn down (its bundle is %s old): %w",
			id, age.Round(time.Millisecond), errLeftoverYoung)
	}
	procs := scanProcesses(r.ns, r.address)
	for _, pid := range procs.shims[id] {
		logger(id).WithField("pid", pid).Info("killing the shim of a task containerd no longer lists")
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("killing shim %d of %q: %w", pid, id, err))
		}
	}
	if len(procs.shims[id]) > 0 && !socketClosed(r.shimSocket(id), killedShimTimeout) {
		errs = append(errs, fmt.Errorf("a killed shim of %q still answers on its socket after %s: %w", id, killedShimTimeout, errdefs.ErrAborted))
	}
	if state := filepath.Join(runcRoot, r.ns, id); exists(state) {
		out, err := exec.CommandContext(ctx, "runc", "--root", filepath.Join(runcRoot, r.ns), "delete", "--force", id).CombinedOutput()
		switch {
		case err == nil:
		case !exists(filepath.Join(state, "state.json")):
			// NOTE: runc made the directory and was cut short before its
			// state: there is nothing of the container to kill.
			errs = append(errs, os.RemoveAll(state))
		default:
			errs = append(errs, fmt.Errorf("runc delete %q: %w: %s", id, err, bytes.TrimSpace(out)))
		}
	}
	for _, dir := range []string{filepath.Join(r.bundleRoot(), id), filepath.Join(r.bundleRoot(), "."+id)} {
		if !exists(dir) {
			continue
		}
		logger(id).WithField("bundle", dir).Info("removing the shim bundle of a task containerd no longer lists")
		errs = append(errs, removeBundle(dir))
	}
	return errors.Join(errs...)
}

// killedShimTimeout bounds the wait for a killed shim's socket to close.
const killedShimTimeout = 10 * time.Second

// socketClosed waits until nothing accepts connections on the unix socket
// at path; false when something still does after timeout.
//
// NOTE: a SIGKILLed process's socket accepts connections until its exit
// gets to closing its files, after freeing its memory; a new shim of the
// ID that finds the socket accepting hands containerd that address instead
// of its own (containerd's shim grouping), and the task's create then
// fails on a connection that closes ("ttrpc: closed", "connection
// refused"): a failed create, a FailedSync event and a retry for nothing.
func socketClosed(path string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(5 * time.Millisecond) {
		conn, err := net.DialTimeout("unix", path, 100*time.Millisecond)
		if err != nil {
			return true
		}
		conn.Close()
		if time.Now().After(deadline) {
			return false
		}
	}
}

// minLeftoverAge is how old the on-disk leftovers of a task containerd does
// not list must be before they are removed.
const minLeftoverAge = 10 * time.Second

// errLeftoverYoung: a task's leftovers are too young to be taken for
// leftovers; try again later. Transient (aborted).
var errLeftoverYoung = fmt.Errorf("leftovers too young to remove: %w", errdefs.ErrAborted)

// taskLeftoverAge is the age of the youngest of id's shim bundle and runc
// state on disk; ok is false when there is none.
func (r *Runtime) taskLeftoverAge(id string) (age time.Duration, ok bool) {
	for _, path := range []string{
		filepath.Join(r.bundleRoot(), id), filepath.Join(r.bundleRoot(), "."+id), filepath.Join(runcRoot, r.ns, id),
	} {
		fi, err := os.Lstat(path)
		if err != nil {
			continue
		}
		if a := time.Since(fi.ModTime()); !ok || a < age {
			age, ok = a, true
		}
	}
	return age, ok
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// hasTaskLeftovers reports whether a shim bundle or runc state of id is on
// disk (a cheap check before the scan of /proc for its shim).
func (r *Runtime) hasTaskLeftovers(id string) bool {
	return exists(filepath.Join(r.bundleRoot(), id)) || exists(filepath.Join(r.bundleRoot(), "."+id)) ||
		exists(filepath.Join(runcRoot, r.ns, id))
}

// removeBundle unmounts a shim bundle's rootfs and removes the bundle, the
// shim's socket and the work directory the bundle links to.
func removeBundle(dir string) error {
	if err := mount.UnmountAll(filepath.Join(dir, "rootfs"), 0); err != nil {
		return fmt.Errorf("unmounting rootfs of %s: %w", dir, err)
	}
	if addr, err := os.ReadFile(filepath.Join(dir, "address")); err == nil {
		sock := strings.TrimPrefix(strings.TrimSpace(string(addr)), "unix://")
		if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
			logger("").WithError(err).Warn("removing a dead shim's socket")
		}
	}
	work, werr := os.Readlink(filepath.Join(dir, "work"))
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing bundle %s: %w", dir, err)
	}
	if werr == nil {
		if err := os.RemoveAll(work); err != nil {
			return fmt.Errorf("removing work dir %s: %w", work, err)
		}
	}
	return nil
}

// processes are the shims and log drivers of one containerd namespace, by
// container ID.
type processes struct {
	shims      map[string][]int
	logDrivers map[string][]int
}

// scanProcesses finds, in /proc, the shims that the containerd at address
// started for namespace ns (`containerd-shim-… -namespace ns -id ID
// -address address`) and the log drivers the shims started for it
// (CONTAINER_NAMESPACE and CONTAINER_ID in their environment).
func scanProcesses(ns, address string) processes {
	found := processes{shims: map[string][]int{}, logDrivers: map[string][]int{}}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return found
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if id, ok := shimOf(args, ns, address); ok {
			found.shims[id] = append(found.shims[id], pid)
			continue
		}
		if len(args) < 2 || args[1] != logDriverArg {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if id, ok := logDriverOf(environ, ns); ok {
			found.logDrivers[id] = append(found.logDrivers[id], pid)
		}
	}
	return found
}

// shimOf returns the container ID a shim command line serves, if it is a
// shim of namespace ns for the containerd at address.
func shimOf(args []string, ns, address string) (string, bool) {
	if !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
		return "", false
	}
	flags := map[string]string{}
	for i := 1; i+1 < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			flags[strings.TrimLeft(args[i], "-")] = args[i+1]
		}
	}
	id := flags["id"]
	if id == "" || flags["namespace"] != ns || flags["address"] != address {
		return "", false
	}
	return id, true
}

// logDriverOf returns the container ID a log driver's environment names,
// if it writes for namespace ns.
func logDriverOf(environ []byte, ns string) (string, bool) {
	var id, gotNS string
	for _, kv := range strings.Split(string(environ), "\x00") {
		if v, ok := strings.CutPrefix(kv, "CONTAINER_ID="); ok {
			id = v
		}
		if v, ok := strings.CutPrefix(kv, "CONTAINER_NAMESPACE="); ok {
			gotNS = v
		}
	}
	return id, id != "" && gotNS == ns
}
