//go:build integration

package daemon_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodLogWebSocket: a running skiffd serves pods/log over WebSocket
// (Upgrade: websocket) with kube-apiserver's protocols — raw bytes for
// binary.k8s.io (and for none), base64 for base64.binary.k8s.io — closing
// once the log is sent, or following it with follow; errors found before
// the stream are a Status, never a hang; and the query's booleans are read
// as kube reads them (Python's client sends follow=True). And the other
// client quirk of /version/ with a trailing slash.
func TestPodLogWebSocket(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ws"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.35",
			Command: []string{"sh", "-c", "echo container is alive; echo second line; sleep 3600"}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const want = "container is alive\nsecond line\n"
	waitFor(t, 2*time.Minute, "the pod's log", func() (bool, error) {
		b, err := pods.GetLogs("ws", &corev1.PodLogOptions{}).DoRaw(ctx)
		return err == nil && string(b) == want, nil
	})
	logURL := func(query string) string {
		u := pods.GetLogs("ws", &corev1.PodLogOptions{}).URL()
		u.Scheme = strings.Replace(u.Scheme, "http", "ws", 1)
		u.RawQuery = query
		return u.String()
	}
	// read collects the messages of one stream until it closes, or until
	// enough says it has what it waits for.
	read := func(query string, protocols []string, decode func([]byte) []byte, enough func(string) bool) string {
		t.Helper()
		cfg, err := websocket.NewConfig(logURL(query), "http://localhost")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Protocol = protocols
		cfg.TlsConfig = s.tlsConfig()
		ws, err := websocket.DialConfig(cfg)
		if err != nil {
			t.Fatalf("opening the log websocket (%q, %v): %v", query, protocols, err)
		}
		defer ws.Close()
		ws.SetDeadline(time.Now().Add(time.Minute))
		var got strings.Builder
		for !enough(got.String()) {
			var msg []byte
			if err := websocket.Message.Receive(ws, &msg); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("reading the log websocket (%q, %v): %v", query, protocols, err)
			}
			got.Write(decode(msg))
		}
		return got.String()
	}
	raw := func(b []byte) []byte { return b }
	unbase64 := func(b []byte) []byte {
		out, err := base64.StdEncoding.DecodeString(string(b))
		if err != nil {
			t.Fatalf("message %q is not base64: %v", b, err)
		}
		return out
	}
	never := func(string) bool { return false }
	for name, tc := range map[string]struct {
		protocols []string
		decode    func([]byte) []byte
	}{
		"binary.k8s.io":        {[]string{"binary.k8s.io"}, raw},
		"no protocol":          {nil, raw},
		"base64.binary.k8s.io": {[]string{"base64.binary.k8s.io"}, unbase64},
	} {
		if got := read("container=main", tc.protocols, tc.decode, never); got != want {
			t.Errorf("%s: log over websocket %q, want %q", name, got, want)
		}
	}

	// Following, with the Python client's spelling of true: the stream
	// stays open after the log so far, lines stamped.
	stamped := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z second line$`)
	got := read("follow=True&timestamps=True", []string{"binary.k8s.io"}, raw, stamped.MatchString)
	if !stamped.MatchString(got) {
		t.Errorf("followed log with timestamps=True: %q", got)
	}
	// The same over plain HTTP, and false in any case.
	for query, wantRe := range map[string]*regexp.Regexp{
		"timestamps=True":  stamped,
		"timestamps=FALSE": regexp.MustCompile(`^container is alive\nsecond line\n$`),
		"timestamps=":      stamped, // kube's conversion: present and empty is true
	} {
		u := pods.GetLogs("ws", &corev1.PodLogOptions{}).URL()
		u.RawQuery = query
		resp, err := s.httpClient().Get(u.String())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !wantRe.Match(body) {
			t.Errorf("GET log?%s: %d %q, want 200 matching %s", query, resp.StatusCode, body, wantRe)
		}
	}

	// GET /version/ (trailing slash), as kube-apiserver answers it.
	if b, err := s.client.CoreV1().RESTClient().Get().AbsPath("/version/").DoRaw(ctx); err != nil || !strings.Contains(string(b), `"gitVersion"`) {
		t.Errorf("GET /version/: %s %v", b, err)
	}

	// A protocol skiff does not speak, and a container still waiting:
	// Statuses before any upgrade.
	if _, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "waiting"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "docker.io/library/no-such-image:0",
			ImagePullPolicy: corev1.PullNever}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		pod, protocol string
		code          int
		message       string
	}{
		"unknown protocol": {"ws", "v4.channel.k8s.io", http.StatusForbidden, `requested protocol(s) are not supported: ["v4.channel.k8s.io"]`},
		"waiting":          {"waiting", "binary.k8s.io", http.StatusBadRequest, `container "main" in pod "waiting" is waiting to start: `},
	} {
		u := pods.GetLogs(tc.pod, &corev1.PodLogOptions{}).URL()
		req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		req.Header.Set("Sec-WebSocket-Protocol", tc.protocol)
		var resp *http.Response
		waitFor(t, time.Minute, name+": a Status", func() (bool, error) {
			var err error
			// HTTP/1.1: an Upgrade has no meaning in HTTP/2.
			client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: s.tlsConfig()}}
			if resp, err = client.Do(req); err != nil {
				return false, err
			}
			return resp.StatusCode != http.StatusOK, nil
		})
		var st metav1.Status
		err := json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil || int(st.Code) != tc.code || !strings.Contains(st.Message, tc.message) {
			t.Errorf("%s: %d %+v (%v), want %d with %q", name, resp.StatusCode, st, err, tc.code, tc.message)
		}
	}
}
