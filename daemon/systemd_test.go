//go:build integration

package daemon_test

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSystemdNotify starts skiffd as systemd starts a Type=notify unit with
// WatchdogSec=: the notification socket is a datagram socket of the test.
// READY=1 must come only once the API answers, STATUS= lines before it,
// WATCHDOG=1 pings after it, STOPPING=1 on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	t.Parallel()
	socket := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	s := newSkiffd(t)
	s.env = []string{"NOTIFY_SOCKET=" + socket, "WATCHDOG_USEC=1000000"} // a ping every 0.5s

	var mu sync.Mutex
	var messages []string
	answeredAtReady := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			m := string(buf[:n])
			if strings.HasPrefix(m, "READY=1") {
				// The moment skiffd says it is ready, one request, no retry.
				c := http.Client{Timeout: 10 * time.Second}
				resp, err := c.Get("http://" + s.addr + "/livez")
				if err == nil {
					resp.Body.Close()
				}
				answeredAtReady <- err
			}
			mu.Lock()
			messages = append(messages, m)
			mu.Unlock()
		}
	}()
	received := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), messages...)
	}
	count := func(prefix string) int {
		n := 0
		for _, m := range received() {
			if strings.HasPrefix(m, prefix) {
				n++
			}
		}
		return n
	}

	s.start()
	select {
	case err := <-answeredAtReady:
		if err != nil {
			t.Fatalf("the API did not answer when skiffd said READY=1: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("no READY=1; got %q", received())
	}
	waitFor(t, time.Minute, "three watchdog pings", func() (bool, error) { return count("WATCHDOG=1") >= 3, nil })
	s.stop()
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("skiffd exited %d after SIGTERM", code)
	}
	waitFor(t, 10*time.Second, "STOPPING=1", func() (bool, error) { return count("STOPPING=1") == 1, nil })

	got := received()
	ready, stopping := -1, -1
	var statuses []string
	for i, m := range got {
		switch {
		case strings.HasPrefix(m, "READY=1"):
			ready = i
			if !strings.Contains(m, "\nSTATUS=serving on "+s.addr+" and "+s.socket) {
				t.Errorf("READY=1 without the serving status: %q", m)
			}
		case strings.HasPrefix(m, "STOPPING=1"):
			stopping = i
		case strings.HasPrefix(m, "STATUS="):
			if ready >= 0 {
				t.Errorf("status %q after READY=1", m)
			}
			statuses = append(statuses, strings.TrimPrefix(m, "STATUS="))
		case m == "WATCHDOG=1":
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
