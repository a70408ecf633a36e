package dnsserver

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// fakeZone knows one name.
type fakeZone struct{}

func (fakeZone) Lookup(name string, qtype uint16) ([]dns.RR, []dns.RR, bool) {
	if name != "web.default.svc.cluster.local." {
		return nil, nil, false
	}
	if qtype != dns.TypeA {
		return nil, nil, true
	}
	rr, _ := dns.NewRR("web.default.svc.cluster.local. 5 IN A 10.43.0.10")
	return []dns.RR{rr}, nil, true
}

// upstream serves example.com (UDP and TCP) on 127.0.0.1 and returns its address.
func upstream(t *testing.T) string {
	t.Helper()
	handler := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg).SetReply(req)
		if req.Question[0].Name == "example.com." {
			rr, _ := dns.NewRR("example.com. 60 IN A 192.0.2.80")
			m.Answer = []dns.RR{rr}
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	// NOTE: listen, which picks again when the port the kernel gave UDP is
	// taken for TCP (seen in CI, with the other packages' tests running).
	pc, ln, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: handler}, {Listener: ln, Handler: handler}} {
		go func() { _ = srv.ActivateAndServe() }()
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return pc.LocalAddr().String()
}

// startServer runs a Server on a free port of 127.0.0.1 (port 0: Listen
// binds UDP and TCP on one port the kernel picks) forwarding to upstreams.
func startServer(t *testing.T, upstreams ...string) string {
	t.Helper()
	s, err := New(Config{Addr: "127.0.0.1:0", Domain: "cluster.local", Zone: fakeZone{}, ForwardTimeout: 300 * time.Millisecond,
		Upstreams: func() ([]string, error) { return upstreams, nil }})
	if err != nil {
		t.Fatal(err)
	}
	pc, ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	if got := ln.Addr().String(); got != addr {
		t.Fatalf("UDP on %s, TCP on %s: want one port", addr, got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, pc, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return addr
}

func query(t *testing.T, addr, network, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	m := new(dns.Msg).SetQuestion(name, qtype)
	resp, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s: %v", network, name, err)
	}
	return resp
}

func TestServer(t *testing.T) {
	addr := startServer(t, upstream(t))
	tests := map[string]struct {
		network, name string
		qtype         uint16
		rcode         int
		answers       int
		authoritative bool
	}{
		"cluster name":                 {"udp", "web.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, 1, true},
		"cluster name over TCP":        {"tcp", "Web.Default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, 1, true},
		"no data":                      {"udp", "web.default.svc.cluster.local.", dns.TypeAAAA, dns.RcodeSuccess, 0, true},
		"unknown cluster name":         {"udp", "nope.default.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, 0, true},
		"zone apex SOA":                {"udp", "cluster.local.", dns.TypeSOA, dns.RcodeSuccess, 1, true},
		"forwarded":                    {"udp", "example.com.", dns.TypeA, dns.RcodeSuccess, 1, false},
		"forwarded over TCP":           {"tcp", "example.com.", dns.TypeA, dns.RcodeSuccess, 1, false},
		"forwarded, upstream NXDOMAIN": {"udp", "nope.example.", dns.TypeA, dns.RcodeNameError, 0, false},
		"unknown reverse is forwarded": {"udp", "1.2.0.192.in-addr.arpa.", dns.TypePTR, dns.RcodeNameError, 0, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resp := query(t, addr, tc.network, tc.name, tc.qtype)
			if resp.Rcode != tc.rcode || len(resp.Answer) != tc.answers || resp.Authoritative != tc.authoritative {
				t.Errorf("got rcode %s, %d answers, authoritative %v:\n%s", dns.RcodeToString[resp.Rcode], len(resp.Answer), resp.Authoritative, resp)
			}
			if tc.rcode == dns.RcodeNameError && tc.authoritative && (len(resp.Ns) != 1 || resp.Ns[0].Header().Rrtype != dns.TypeSOA) {
				t.Errorf("NXDOMAIN without the zone's SOA:\n%s", resp)
			}
		})
	}
}

func TestServerUpstreamDown(t *testing.T) {
	// A UDP port nobody reads: the query times out.
	dead, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	addr := startServer(t, dead.LocalAddr().String())
	start := time.Now()
	resp := query(t, addr, "udp", "example.com.", dns.TypeA)
	if resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("rcode %s, want SERVFAIL", dns.RcodeToString[resp.Rcode])
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("SERVFAIL after %s", d)
	}
	// Cluster names do not depend on the upstream.
	if resp := query(t, addr, "udp", "nope.default.svc.cluster.local.", dns.TypeA); resp.Rcode != dns.RcodeNameError {
		t.Errorf("unknown cluster name: rcode %s", dns.RcodeToString[resp.Rcode])
	}
}

// BenchmarkServerUDP measures a cluster-domain answer and an NXDOMAIN over UDP on loopback.
func BenchmarkServerUDP(b *testing.B) {
	for _, name := range []string{"web.default.svc.cluster.local.", "nope.default.svc.cluster.local."} {
		b.Run(name, func(b *testing.B) {
			addr := benchServer(b)
			c := &dns.Client{Timeout: 5 * time.Second}
			m := new(dns.Msg).SetQuestion(name, dns.TypeA)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, err := c.Exchange(m, addr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchServer(b *testing.B) string {
	b.Helper()
	probe, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := probe.LocalAddr().String()
	probe.Close()
	s, err := New(Config{Addr: addr, Domain: "cluster.local", Zone: fakeZone{}, Upstreams: func() ([]string, error) { return nil, nil }})
	if err != nil {
		b.Fatal(err)
	}
	pc, ln, err := s.Listen()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx, pc, ln) }()
	b.Cleanup(func() { cancel(); <-done })
	return addr
}
