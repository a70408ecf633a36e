package sdnotify

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// listen is a fake systemd: a unixgram socket named by NOTIFY_SOCKET whose
// datagrams arrive on the returned channel.
func listen(t *testing.T) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	got := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	return got
}

func next(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case m := <-got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
		return ""
	}
}

func TestReadyWaitsForTheProbe(t *testing.T) {
	got := listen(t)
	n := New()
	n.retry = time.Millisecond
	var calls atomic.Int32
	probe := func(context.Context) error {
		if calls.Add(1) < 5 {
			return errors.New("not yet")
		}
		return nil
	}
	n.Status("opening the store")
	if m := next(t, got); m != "STATUS=opening the store" {
		t.Errorf("got %q", m)
	}
	if !n.Ready(context.Background(), probe, "serving") {
		t.Fatal("Ready gave up")
	}
	if m := next(t, got); m != "READY=1\nSTATUS=serving" {
		t.Errorf("got %q", m)
	}
	if c := calls.Load(); c != 5 {
		t.Errorf("probed %d times, want 5", c)
	}
	n.Stopping("stopping")
	if m := next(t, got); m != "STOPPING=1\nSTATUS=stopping" {
		t.Errorf("got %q", m)
	}
}

func TestReadyGivesUpWithTheContext(t *testing.T) {
	got := listen(t)
	n := New()
	n.retry = time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if n.Ready(ctx, func(context.Context) error { return errors.New("down") }, "serving") {
		t.Fatal("Ready without an answer")
	}
	select {
	case m := <-got:
		t.Errorf("sent %q", m)
	default:
	}
}

func TestWatchdogPingsWhileTheProbePasses(t *testing.T) {
	got := listen(t)
	t.Setenv("WATCHDOG_USEC", "20000") // 20ms: a ping every 10ms
	n := New()
	if n.watchdog != 20*time.Millisecond {
		t.Fatalf("watchdog %v", n.watchdog)
	}
	// The probe passes 3 times, then fails 3 times: exactly 3 pings.
	var calls atomic.Int32
	failed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Watchdog(ctx, func(context.Context) error {
			switch c := calls.Add(1); {
			case c <= 3:
				return nil
			case c == 6:
				close(failed)
			}
			return errors.New("store closed")
		})
	}()
	<-failed
	cancel()
	<-done
	for range 3 {
		if m := next(t, got); m != "WATCHDOG=1" {
			t.Fatalf("got %q", m)
		}
	}
	select {
	case m := <-got:
		t.Errorf("sent %q while unhealthy", m)
	default:
	}
}

func TestWithoutWatchdogReturns(t *testing.T) {
	listen(t)
	t.Setenv("WATCHDOG_USEC", "")
	done := make(chan struct{})
	go func() { New().Watchdog(context.Background(), func(context.Context) error { return nil }); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Watchdog without WATCHDOG_USEC did not return")
	}
}

func TestWithoutNotifySocketNothingIsSent(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	n := New()
	n.Status("x") // must neither fail nor block
	if !n.Ready(context.Background(), func(context.Context) error { return nil }, "serving") {
		t.Fatal("Ready without systemd")
	}
}
