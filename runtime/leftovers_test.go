package runtime

import (
	"strings"
	"testing"
	"time"
)

func TestShimOf(t *testing.T) {
	const ns, addr = "skiff", "/run/containerd/containerd.sock"
	tests := map[string]struct {
		cmdline string
		id      string
		ok      bool
	}{
		"long-lived shim": {"/usr/bin/containerd-shim-runc-v2 -namespace skiff -id abc -address " + addr, "abc", true},
		"start command": {"/usr/bin/containerd-shim-runc-v2 -namespace skiff -address " + addr +
			" -publish-binary /usr/bin/containerd -id abc start", "abc", true},
		"other namespace":  {"/usr/bin/containerd-shim-runc-v2 -namespace k8s.io -id abc -address " + addr, "", false},
		"other containerd": {"/usr/bin/containerd-shim-runc-v2 -namespace skiff -id abc -address /tmp/c.sock", "", false},
		"not a shim":       {"/bin/sleep -namespace skiff -id abc -address " + addr, "", false},
		"no id":            {"/usr/bin/containerd-shim-runc-v2 -namespace skiff -address " + addr, "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			id, ok := shimOf(strings.Fields(tc.cmdline), ns, addr)
			if id != tc.id || ok != tc.ok {
				t.Errorf("shimOf = %q, %v; want %q, %v", id, ok, tc.id, tc.ok)
			}
		})
	}
}

func TestLogDriverOf(t *testing.T) {
	tests := map[string]struct {
		environ string
		id      string
		ok      bool
	}{
		"ours":       {"PATH=/bin\x00CONTAINER_ID=abc\x00CONTAINER_NAMESPACE=skiff\x00", "abc", true},
		"other ns":   {"CONTAINER_ID=abc\x00CONTAINER_NAMESPACE=k8s.io", "abc", false},
		"no id":      {"CONTAINER_NAMESPACE=skiff", "", false},
		"not driver": {"PATH=/bin", "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			id, ok := logDriverOf([]byte(tc.environ), "skiff")
			if id != tc.id || ok != tc.ok {
				t.Errorf("logDriverOf = %q, %v; want %q, %v", id, ok, tc.id, tc.ok)
			}
		})
	}
}

func TestIDLocks(t *testing.T) {
	var l idLocks
	unlock := l.lock("a")
	if _, ok := l.tryLock("a"); ok {
		t.Fatal("tryLock took a held lock")
	}
	other, ok := l.tryLock("b")
	if !ok {
		t.Fatal("tryLock of a free ID failed")
	}
	other()
	got, done := make(chan struct{}), make(chan struct{})
	go func() {
		release := l.lock("a")
		close(got)
		release()
		close(done)
	}()
	select {
	case <-got:
		t.Fatal("lock taken twice")
	case <-time.After(20 * time.Millisecond):
	}
	unlock()
	<-got
	<-done
	if len(l.held) != 0 {
		t.Errorf("locks left after release: %v", l.held)
	}
	if unlock, ok := l.tryLock("a"); !ok {
		t.Error("tryLock of a released ID failed")
	} else {
		unlock()
	}
}
