//go:build integration

package daemon_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// localWebPod runs busybox's httpd on 127.0.0.1:port only, serving a page that
// names the pod: reachable through the pod's own localhost and nowhere
// else.
func localWebPod(name string, port int, hostNetwork bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{HostNetwork: hostNetwork, Containers: []corev1.Container{{Name: "httpd", Image: "busybox:1.35",
			Command: []string{"sh", "-c", fmt.Sprintf("mkdir -p /www && echo served by %s > /www/index.html && exec httpd -f -p 127.0.0.1:%d -h /www", name, port)}}}},
	}
}

// portForward is a kubectl port-forward running in the background.
type portForward struct {
	cmd    *exec.Cmd
	local  string // 127.0.0.1:<port> kubectl listens on
	mu     sync.Mutex
	stderr strings.Builder
}

var forwardingLine = regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> `)

// startPortForward runs kubectl port-forward args and waits for the local
// port it chose.
func startPortForward(t *testing.T, k *streamKubectl, args ...string) *portForward {
	t.Helper()
	pf := &portForward{cmd: k.command(append([]string{"port-forward"}, args...)...)}
	out, err := pf.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := pf.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := pf.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pf.cmd.Process.Kill()
		_ = pf.cmd.Wait()
	})
	go func() {
		sc := bufio.NewScanner(errOut)
		for sc.Scan() {
			pf.mu.Lock()
			pf.stderr.WriteString(sc.Text() + "\n")
			pf.mu.Unlock()
		}
	}()
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := forwardingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		close(found)
	}()
	select {
	case port, ok := <-found:
		if !ok {
			_ = pf.cmd.Wait()
			t.Fatalf("kubectl port-forward %s ended without forwarding:\n%s", strings.Join(args, " "), pf.errors())
		}
		pf.local = "127.0.0.1:" + port
	case <-time.After(time.Minute):
		t.Fatalf("kubectl port-forward %s: no local port after a minute:\n%s", strings.Join(args, " "), pf.errors())
	}
	return pf
}

func (pf *portForward) errors() string {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	return pf.stderr.String()
}

// forwardedClient opens a connection per request, each one a forwarded
// connection of its own.
var forwardedClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}, Timeout: time.Minute}

// getPage GETs the forwarded page.
func getPage(local string) (string, error) {
	resp, err := forwardedClient.Get("http://" + local + "/index.html")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// getPages GETs the forwarded page over n connections at once.
func getPages(t *testing.T, local string, n int) []string {
	t.Helper()
	pages := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { pages[i], errs[i] = getPage(local) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("GET through the forward: %v", err)
		}
	}
	return pages
}

// TestKubectlPortForward: kubectl port-forward reaches a server that listens
// on the pod's own localhost only — through the WebSocket tunnel with
// kubectl 1.32 (no fallback to SPDY), through SPDY with kubectl 1.27 —
// several connections at once; a port where nothing listens gets the
// kubelet's error on the error stream, and the forward goes on.
func TestKubectlPortForward(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, localWebPod("web", 80, false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodRunning(t, s, "web")
	for name, bin := range map[string]string{"1.32": kubectlVersions["1.32"].path, "1.27": kubectlVersions["1.27"].path} {
		t.Run(name, func(t *testing.T) {
			k := newStreamKubectl(t, bin, s)
			pf := startPortForward(t, k, "-v=4", "pod/web", ":80")
			waitFor(t, time.Minute, "the pod's server answering through the forward", func() (bool, error) {
				_, err := getPage(pf.local)
				return err == nil, nil
			})
			for i, page := range getPages(t, pf.local, 8) {
				if page != "served by web\n" {
					t.Errorf("connection %d got %q, want the pod's page", i, page)
				}
			}
			logs := pf.errors()
			tunnelled := strings.Contains(logs, "negotiated protocol: portforward.k8s.io")
			if fellBack := strings.Contains(logs, "fallback to secondary dialer"); name == "1.32" && (!tunnelled || fellBack) {
				t.Errorf("kubectl 1.32 did not forward through the WebSocket tunnel:\n%s", logs)
			}
			if name == "1.27" && tunnelled {
				t.Errorf("kubectl 1.27 tunnelled?\n%s", logs)
			}
		})
	}

	// Nothing listens on 81: the client is told why, and the forward of 80
	// still works.
	k := newStreamKubectl(t, kubectlVersions["1.32"].path, s)
	pf := startPortForward(t, k, "pod/web", ":81")
	conn, err := net.Dial("tcp", pf.local)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = conn.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	_, _ = io.ReadAll(conn)
	conn.Close()
	want := `error forwarding port 81 to pod ` + string(podUID(t, s, "web")) + `, uid : failed to execute portforward in network namespace `
	waitFor(t, time.Minute, "kubectl to show the forward's error", func() (bool, error) {
		return strings.Contains(pf.errors(), want) && strings.Contains(pf.errors(), "failed to connect to localhost:81 inside namespace"), nil
	})
}

func podUID(t *testing.T, s *skiffd, name string) string {
	t.Helper()
	p, err := s.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(p.UID)
}

// wsPortForward opens pods/<pod>/portforward?ports=<port> over WebSocket
// with v4.channel.k8s.io, as the e2e suite's websocket spec does.
func wsPortForward(t *testing.T, s *skiffd, pod string, port int) (*gwebsocket.Conn, *http.Response, error) {
	t.Helper()
	d := gwebsocket.Dialer{TLSClientConfig: s.tlsConfig(), Subprotocols: []string{"v4.channel.k8s.io"}, HandshakeTimeout: time.Minute}
	u := "wss://" + s.addr + "/api/v1/namespaces/default/pods/" + pod + "/portforward?ports=" + strconv.Itoa(port)
	return d.Dial(u, nil)
}

// handshakeError describes a failed WebSocket handshake with the server's
// answer.
func handshakeError(resp *http.Response, err error) error {
	if resp == nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	return fmt.Errorf("%w: %s %s", err, resp.Status, b)
}

// readFrame reads one channel.k8s.io frame.
func readFrame(t *testing.T, ws *gwebsocket.Conn) (byte, []byte) {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
	_, msg, err := ws.ReadMessage()
	if err != nil || len(msg) == 0 {
		t.Fatalf("reading a frame: %q %v", msg, err)
	}
	return msg[0], msg[1:]
}

// TestPortForwardWebSocket: the v4.channel.k8s.io port-forward protocol
// (channel 0 data, 1 error, each opened with the port) reaches a pod's
// localhost, and a hostNetwork pod's server on the node's loopback; a pod
// that has ended is refused before the upgrade with the kubelet's answer.
func TestPortForwardWebSocket(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	_, free, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	hostPort, err := strconv.Atoi(free)
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]struct {
		pod  *corev1.Pod
		port int
	}{
		"own network":  {localWebPod("web", 80, false), 80},
		"host network": {localWebPod("hostweb", hostPort, true), hostPort},
	}
	for _, tc := range pods {
		if _, err := s.client.CoreV1().Pods("default").Create(ctx, tc.pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, tc := range pods {
		t.Run(name, func(t *testing.T) {
			waitPodRunning(t, s, tc.pod.Name)
			var body string
			waitFor(t, time.Minute, "the page through the WebSocket", func() (bool, error) {
				ws, resp, err := wsPortForward(t, s, tc.pod.Name, tc.port)
				if err != nil {
					return false, handshakeError(resp, err)
				}
				defer ws.Close()
				for _, want := range []byte{0, 1} {
					ch, data := readFrame(t, ws)
					if ch != want || len(data) != 2 || int(binary.LittleEndian.Uint16(data)) != tc.port {
						return false, fmt.Errorf("first frame of channel %d: channel %d %v", want, ch, data)
					}
				}
				if err := ws.WriteMessage(gwebsocket.BinaryMessage, append([]byte{0}, "GET /index.html HTTP/1.0\r\n\r\n"...)); err != nil {
					return false, err
				}
				var got strings.Builder
				for {
					_ = ws.SetReadDeadline(time.Now().Add(time.Minute))
					_, msg, err := ws.ReadMessage()
					if err != nil {
						break // the server closed the connection: the forward is over
					}
					if len(msg) > 1 && msg[0] == 0 {
						got.Write(msg[1:])
					}
					if len(msg) > 1 && msg[0] == 1 {
						// A running container's server may not listen yet
						// (the host network's httpd was refused once in CI):
						// the kubelet's words for that, then try again.
						if strings.Contains(string(msg[1:]), "connect: connection refused") {
							return false, nil
						}
						return false, fmt.Errorf("error channel: %s", msg[1:])
					}
				}
				body = got.String()
				return strings.Contains(body, "\r\n\r\n"), nil
			})
			if want := "served by " + tc.pod.Name + "\n"; !strings.HasSuffix(body, want) {
				t.Errorf("through the WebSocket: %q, want a response ending in %q", body, want)
			}
		})
	}

	// An ended pod: the kubelet's 500 before any upgrade.
	done := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "done"}, Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "c", Image: "busybox:1.35", Command: []string{"true"}}}}}
	runToEnd(t, s, done, corev1.PodSucceeded)
	_, resp, err := wsPortForward(t, s, "done", 80)
	if err == nil || resp == nil {
		t.Fatalf("port-forward to an ended pod: %v %v, want a refused upgrade", resp, err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusInternalServerError || string(b) != `pod not found ("done_default")`+"\n" {
		t.Errorf("port-forward to an ended pod: %d %s", resp.StatusCode, b)
	}
	// A missing port parameter is the kubelet's 400.
	d := gwebsocket.Dialer{TLSClientConfig: s.tlsConfig(), Subprotocols: []string{"v4.channel.k8s.io"}}
	if _, resp, _ := d.Dial("wss://"+s.addr+"/api/v1/namespaces/default/pods/web/portforward", nil); resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no ports: %v, want 400", resp)
	}
}
