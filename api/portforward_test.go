package api

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// TestPortForwardClients: client-go's port forwarder, over SPDY and over
// SPDY tunnelled through a WebSocket, gets one forwarded connection per
// local connection, several at once, on every port it asked for.
func TestPortForwardClients(t *testing.T) {
	srv := newStreamServer(t, &fakeStreams{}, runningPod("web", "c"))
	u, err := url.Parse(srv.URL + "/api/v1/namespaces/default/pods/web/portforward")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: srv.URL}
	dialers := map[string]func(t *testing.T) httpstream.Dialer{
		"SPDY": func(t *testing.T) httpstream.Dialer {
			rt, upgrader, err := spdy.RoundTripperFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
		},
		"WebSocket tunnel": func(t *testing.T) httpstream.Dialer {
			d, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
	}
	for name, dialer := range dialers {
		t.Run(name, func(t *testing.T) {
			stop, ready := make(chan struct{}), make(chan struct{})
			fw, err := portforward.NewOnAddresses(dialer(t), []string{"127.0.0.1"}, []string{"0:80", "0:81"}, stop, ready, io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- fw.ForwardPorts() }()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("forwarding: %v", err)
			}
			ports, err := fw.GetPorts()
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range 6 {
				p := ports[i%2]
				wg.Go(func() {
					msg := fmt.Sprintf("hello %d", i)
					if got, err := echo(p.Local, msg); err != nil || got != fmt.Sprintf("%d:%s", p.Remote, msg) {
						t.Errorf("connection %d to %d: %q %v", i, p.Remote, got, err)
					}
				})
			}
			wg.Wait()
			close(stop)
			if err := <-done; err != nil {
				t.Errorf("forwarding ended with %v", err)
			}
		})
	}
}

// echo sends msg over a connection to the local port, ends its side and
// returns what came back.
func echo(port uint16, msg string) (string, error) {
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 10*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, msg); err != nil {
		return "", err
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// TestPortForwardWebSocketChannels: v4.channel.k8s.io gives each ?ports=
// entry a data and an error channel, each opened with the port; a failed
// forward is reported on its error channel in the kubelet's words.
func TestPortForwardWebSocketChannels(t *testing.T) {
	srv := newStreamServer(t, &fakeStreams{}, runningPod("web", "c"))
	base := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/v1/namespaces/default/pods/web/portforward"
	d := gwebsocket.Dialer{Subprotocols: []string{"v4.channel.k8s.io"}, HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.Dial(base+"?ports=80,9", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	read := func() (byte, string) {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, msg, err := ws.ReadMessage()
		if err != nil || len(msg) == 0 {
			t.Fatalf("reading: %q %v", msg, err)
		}
		return msg[0], string(msg[1:])
	}
	opened := map[byte]uint16{}
	for range 4 {
		ch, data := read()
		opened[ch] = binary.LittleEndian.Uint16([]byte(data))
	}
	if want := map[byte]uint16{0: 80, 1: 80, 2: 9, 3: 9}; fmt.Sprint(opened) != fmt.Sprint(want) {
		t.Fatalf("channels opened with ports %v, want %v", opened, want)
	}
	if err := ws.WriteMessage(gwebsocket.BinaryMessage, append([]byte{0}, "hi"...)); err != nil {
		t.Fatal(err)
	}
	got := map[byte]string{}
	for !strings.HasSuffix(got[0], "hi") || got[3] == "" {
		ch, data := read()
		got[ch] += data
	}
	if got[0] != "80:hi" {
		t.Errorf("data channel of port 80: %q", got[0])
	}
	if want := "error forwarding port 9 to pod "; !strings.HasPrefix(got[3], want) || !strings.HasSuffix(got[3], ", uid : connection refused") {
		t.Errorf("error channel of port 9: %q", got[3])
	}

	// The kubelet's refusals of the ports, before any upgrade.
	for query, want := range map[string]string{
		"":          `query parameter "port" is required`,
		"?ports=":   `query parameter "port" cannot be empty`,
		"?ports=0":  `port "0" must be > 0`,
		"?ports=x1": `unable to parse "x1" as a port: strconv.ParseUint: parsing "x1": invalid syntax`,
	} {
		_, resp, err := d.Dial(base+query, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Errorf("ports %q: %v %v, want 400", query, resp, err)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != want+"\n" {
			t.Errorf("ports %q: %s, want %s", query, b, want)
		}
	}
}
