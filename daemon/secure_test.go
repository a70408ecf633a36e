package daemon

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKubeconfigServer(t *testing.T) {
	for listen, want := range map[string]string{
		"[::]:6443":         "https://127.0.0.1:6443",
		"0.0.0.0:6443":      "https://127.0.0.1:6443",
		"127.0.0.1:40001":   "https://127.0.0.1:40001",
		"192.0.2.7:6443":    "https://192.0.2.7:6443",
		"[2001:db8::1]:443": "https://[2001:db8::1]:443",
	} {
		if got, err := kubeconfigServer(listen); err != nil || got != want {
			t.Errorf("kubeconfigServer(%q) = %q, %v; want %q", listen, got, err, want)
		}
	}
	if _, err := kubeconfigServer("localhost:6443"); err == nil {
		t.Error("a listen address that is no IP:port was accepted")
	}
}

func TestLockDataDir(t *testing.T) {
	dir := t.TempDir()
	release, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to the open file: a second open conflicts, as a
	// second process would.
	if _, err := lockDataDir(dir); err == nil || !strings.Contains(err.Error(), "another skiffd (pid ") {
		t.Errorf("second lock: %v", err)
	}
	release()
	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again()
}

func TestClaimSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := claimSocket(path); err == nil || !strings.Contains(err.Error(), "another skiffd is serving on socket") {
		t.Errorf("a live socket: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("a live socket was removed: %v", err)
	}
	// What a killed skiffd leaves: the file, nobody listening.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if err := claimSocket(path); err != nil {
		t.Errorf("a stale socket: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a stale socket was left: %v", err)
	}
}
