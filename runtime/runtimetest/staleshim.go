package runtimetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/runtime"
)

// StaleShim starts a process that plays a shim of a task of id which the
// containerd at address no longer knows (as a containerd restart can
// leave one): it carries a shim's command line, listens on id's shim
// socket and answers nothing. It holds a GiB, so that once killed its
// exit (which frees memory before it closes files) leaves the socket
// accepting for a while. The returned channel is closed when it has
// exited; the test's cleanup kills it and removes the socket.
func StaleShim(t testing.TB, address, ns, id string) (exited <-chan struct{}) {
	t.Helper()
	// NOTE: Debian's python3 itself, not a wrapper that would exec it
	// under another argv[0]: a shim is known by its command line.
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("no %s to play a stale shim (make deps installs it with python3-kubernetes): %v", python, err)
	}
	sock := runtime.ShimSocket(address, ns, id)
	ready := filepath.Join(t.TempDir(), "ready")
	const listen = `import os, socket
ballast = b"x" * (1 << 30)
s = socket.socket(socket.AF_UNIX)
s.bind(os.environ["SOCK"])
s.listen(16)
open(os.environ["READY"], "w").close()
held = []
while True:
    held.append(s.accept()[0])
`
	stale := &exec.Cmd{
		Path: python,
		Args: []string{"containerd-shim-runc-v2", "-c", listen, "-namespace", ns, "-id", id, "-address", address},
		Env:  append(os.Environ(), "SOCK="+sock, "READY="+ready),
	}
	if err := stale.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = stale.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = stale.Process.Kill()
		<-done
		_ = os.Remove(sock)
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			return done
		}
		if time.Now().After(deadline) {
			t.Fatal("the stale shim did not listen")
		}
	}
}
