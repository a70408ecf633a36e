//go:build integration

package daemon_test

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSystemdNotify starts skiffd as systemd starts a Type=notify unit with
// WatchdogSec=: the notification socket is a datagram socket of the test.
// READY=1 must come only once the API answers, STATUS= lines before it,
// WATCHDOG=1 pings after it, STOPPING=1 on SIGTERM, all from skiffd.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	answeredAtReady := make(chan error, 1)
	n := listenNotify(t, func(m notification) {
		if strings.HasPrefix(m.text, "READY=1") {
			// The moment skiffd says it is ready, one request, no retry.
			c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: s.tlsConfig()}}
			resp, err := c.Get(s.url("/livez"))
			if err == nil {
				resp.Body.Close()
			}
			answeredAtReady <- err
		}
	})
	s.env = []string{"NOTIFY_SOCKET=" + n.path, "WATCHDOG_USEC=1000000"} // a ping every 0.5s

	s.start()
	select {
	case err := <-answeredAtReady:
		if err != nil {
			t.Fatalf("the API did not answer when skiffd said READY=1: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("no READY=1; got %q", n.received())
	}
	waitFor(t, time.Minute, "three watchdog pings", func() (bool, error) { return n.count("WATCHDOG=1") >= 3, nil })
	pid := s.cmd.Process.Pid
	s.stop()
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("skiffd exited %d after SIGTERM", code)
	}
	waitFor(t, time.Minute, "STOPPING=1", func() (bool, error) { return n.count("STOPPING=1") == 1, nil })

	got := n.received()
	ready, stopping := -1, -1
	var statuses []string
	for i, m := range got {
		if m.pid != int32(pid) {
			t.Errorf("%q came from pid %d, not skiffd's %d", m.text, m.pid, pid)
		}
		switch {
		case strings.HasPrefix(m.text, "READY=1"):
			ready = i
			if !strings.Contains(m.text, "\nSTATUS=serving on "+s.addr+" and "+s.socket) {
				t.Errorf("READY=1 without the serving status: %q", m.text)
			}
		case strings.HasPrefix(m.text, "STOPPING=1"):
			stopping = i
		case strings.HasPrefix(m.text, "STATUS="):
			if ready >= 0 {
				t.Errorf("status %q after READY=1", m.text)
			}
			statuses = append(statuses, strings.TrimPrefix(m.text, "STATUS="))
		case m.text == "WATCHDOG=1":
			if ready < 0 || stopping >= 0 {
				t.Errorf("WATCHDOG=1 outside of READY=1 and STOPPING=1: %q", got)
			}
		}
	}
	if ready < 0 || stopping < ready {
		t.Errorf("READY=1 at %d, STOPPING=1 at %d: %q", ready, stopping, got)
	}
	for _, want := range []string{"opening the store", "connecting to containerd", "importing images", "starting the controllers"} {
		if !contains(statuses, want) {
			t.Errorf("statuses %q lack %q", statuses, want)
		}
	}
}

// TestSystemdNotifyEmbeddedContainerd: a containerd skiffd starts itself
// would tell systemd it is ready (containerd speaks the protocol too) if
// it inherited the notification socket; only skiffd may.
func TestSystemdNotifyEmbeddedContainerd(t *testing.T) {
	t.Parallel()
	// The later --containerd-address wins: a socket nobody serves.
	s := newSkiffd(t, "--containerd-address", filepath.Join(t.TempDir(), "none.sock"))
	n := listenNotify(t, nil)
	s.env = []string{"NOTIFY_SOCKET=" + n.path}
	s.start()
	pid := int32(s.cmd.Process.Pid)
	waitFor(t, time.Minute, "READY=1 from skiffd", func() (bool, error) {
		for _, m := range n.received() {
			if m.pid == pid && strings.HasPrefix(m.text, "READY=1") {
				return true, nil
			}
		}
		return false, nil
	})
	for _, m := range n.received() {
		if m.pid != pid {
			t.Errorf("%q came from pid %d, not skiffd's %d", m.text, m.pid, pid)
		}
	}
}

// notification is one datagram on the notification socket and its sender.
type notification struct {
	pid  int32
	text string
}

// notifySocket is a fake systemd's notification socket; it learns each
// sender's pid as systemd does (SO_PASSCRED).
type notifySocket struct {
	path string
	mu   sync.Mutex
	got  []notification
}

// listenNotify listens on a new notification socket; onMessage, if set,
// sees each notification as it arrives.
func listenNotify(t *testing.T, onMessage func(notification)) *notifySocket {
	t.Helper()
	n := &notifySocket{path: filepath.Join(t.TempDir(), "notify")}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	raw, err := conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1) }); err != nil || serr != nil {
		t.Fatalf("SO_PASSCRED: %v %v", err, serr)
	}
	go func() {
		buf, oob := make([]byte, 4096), make([]byte, 1024)
		for {
			nb, noob, _, _, err := conn.ReadMsgUnix(buf, oob)
			if err != nil {
				return
			}
			m := notification{pid: -1, text: string(buf[:nb])}
			if msgs, err := syscall.ParseSocketControlMessage(oob[:noob]); err == nil {
				for _, cm := range msgs {
					if cred, err := syscall.ParseUnixCredentials(&cm); err == nil {
						m.pid = cred.Pid
					}
				}
			}
			if onMessage != nil {
				onMessage(m)
			}
			n.mu.Lock()
			n.got = append(n.got, m)
			n.mu.Unlock()
		}
	}()
	return n
}

func (n *notifySocket) received() []notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]notification(nil), n.got...)
}

// count is how many notifications begin with prefix.
func (n *notifySocket) count(prefix string) int {
	c := 0
	for _, m := range n.received() {
		if strings.HasPrefix(m.text, prefix) {
			c++
		}
	}
	return c
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
