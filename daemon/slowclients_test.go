//go:build integration

package daemon_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestSlowClientsCutOff: with --request-timeout 2s, 150 clients sending
// their bodies a byte at a time are all answered and disconnected — 504
// for those served, 429 for those past --max-mutating-requests-inflight —
// while a watch and a log follow opened before them stay open and go on
// delivering.
func TestSlowClientsCutOff(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	s := newSkiffd(t, "--request-timeout", timeout.String())
	s.start()
	ctx := context.Background()

	talker := shPod("talker", corev1.RestartPolicyNever, "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done")
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, talker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.client, "talker", time.Minute, "running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	follow, err := s.client.CoreV1().Pods("default").GetLogs("talker", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer follow.Close()
	followed := bufio.NewScanner(follow)
	w, err := s.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const clients = 150
	tlsConfig := s.tlsConfig()
	answers := make(chan string, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- slowPost(s.addr, tlsConfig, i, 30*time.Second)
		}()
	}
	wg.Wait()
	close(answers)
	cutOff := time.Since(start)
	codes := map[string]int{}
	for a := range answers {
		codes[a]++
	}
	if codes["504 closed"]+codes["429 closed"] != clients || codes["504 closed"] == 0 {
		t.Errorf("answers to %d slow clients: %v, want all 504 (or 429 past the in-flight limit) and disconnected", clients, codes)
	}
	t.Logf("%d slow clients cut off within %s (timeout %s): %v", clients, cutOff.Round(100*time.Millisecond), timeout, codes)

	// The streams opened before are still open, longer than the timeout.
	if elapsed := time.Since(start); elapsed < timeout {
		t.Fatalf("only %s passed", elapsed)
	}
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, sleepPod("probe"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Added {
			t.Errorf("watch after the slow clients: %s %v", ev.Type, ev.Object)
		}
	case <-time.After(time.Minute):
		t.Error("the watch delivered nothing after the slow clients were cut off")
	}
	mark := time.Now()
	for followed.Scan() && time.Since(mark) < timeout+time.Second {
	}
	if !strings.HasPrefix(followed.Text(), "tick ") {
		t.Errorf("log follow after the timeout: %q, %v; want ticks", followed.Text(), followed.Err())
	}
}

// slowPost sends a POST whose 1000-byte body comes a byte every 100ms,
// and says what came of it: "<code> closed" when the server answered and
// closed the connection, "<code> open" when it answered but left it open,
// or what went wrong.
func slowPost(addr string, tlsConfig *tls.Config, i int, giveUp time.Duration) string {
	conn, err := tls.Dial("tcp", addr, tlsConfig)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: skiff\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"metadata\":{\"name\":\"slow-%d\"", i)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(giveUp))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "no answer: " + err.Error()
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := br.ReadByte(); err != nil {
		return fmt.Sprintf("%d closed", resp.StatusCode)
	}
	return fmt.Sprintf("%d open", resp.StatusCode)
}
