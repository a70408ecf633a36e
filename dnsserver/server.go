// Package dnsserver is the DNS server skiffd gives its pods: names of the
// cluster domain are answered from a Zone (kept by the daemon from
// Services and EndpointSlices), reverse names too when the Zone knows
// them, and everything else is forwarded to the host's resolvers. It
// serves UDP and TCP on one address, which need not exist yet when it
// starts (see Listen). It imports no skiff package.
package dnsserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"github.com/sirupsen/logrus"
)

// Zone answers the names the server is authoritative for.
type Zone interface {
	// Lookup answers name (lower case, fully qualified) for qtype: the
	// answer records, extra records (the addresses of SRV targets), and
	// whether the name exists at all (NODATA rather than NXDOMAIN).
	Lookup(name string, qtype uint16) (answer, extra []dns.RR, exists bool)
}

// Config configures a Server.
type Config struct {
	// Addr is the IP:port to serve on (UDP and TCP).
	Addr string
	// Domain is the zone the server is authoritative for ("cluster.local").
	Domain string
	// Zone answers the names of Domain, and the reverse names it knows.
	Zone Zone
	// Upstreams are the resolvers ("IP" or "IP:port") names outside Domain
	// are forwarded to, asked at each forwarded query (the host's
	// resolv.conf may change).
	Upstreams func() ([]string, error)
	// ForwardTimeout bounds the wait for one upstream; 0 = 2s. A query
	// that no upstream answers gets SERVFAIL within 4s.
	ForwardTimeout time.Duration
}

// negativeTTL is the TTL of the SOA sent with negative answers (CoreDNS'
// default TTL for the kubernetes zone is 5s).
const negativeTTL = 5

// Server serves DNS. Create it with New, start it with Serve.
type Server struct {
	cfg    Config
	domain string // fully qualified, lower case
	soa    *dns.SOA

	mu      sync.Mutex
	servers []*dns.Server
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Zone == nil || cfg.Upstreams == nil || cfg.Addr == "" {
		return nil, errors.New("dnsserver: incomplete config")
	}
	if cfg.ForwardTimeout <= 0 {
		cfg.ForwardTimeout = 2 * time.Second
	}
	domain := dns.Fqdn(strings.ToLower(cfg.Domain))
	if _, ok := dns.IsDomainName(domain); !ok || domain == "." {
		return nil, fmt.Errorf("dnsserver: %q is not a domain name", cfg.Domain)
	}
	s := &Server{cfg: cfg, domain: domain}
	s.soa = &dns.SOA{
		Hdr:     dns.RR_Header{Name: domain, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: negativeTTL},
		Ns:      "ns.dns." + domain,
		Mbox:    "hostmaster." + domain,
		Serial:  1,
		Refresh: 7200,
		Retry:   1800,
		Expire:  86400,
		Minttl:  negativeTTL,
	}
	return s, nil
}

// Listen opens the UDP and TCP sockets on Config.Addr. A port of 0 is
// one the kernel picks free for both protocols.
//
// NOTE: the sockets are bound with IP_FREEBIND: the address (the pod
// bridge's gateway) appears only when the CNI bridge plugin sets up the
// first pod, and may go and come back with the bridge. A freely bound
// socket receives whatever is sent to the address whenever it exists,
// without skiffd creating the bridge itself or watching for it.
func (s *Server) Listen() (net.PacketConn, net.Listener, error) {
	return listen(s.cfg.Addr)
}

// listen binds UDP and TCP on addr (see Listen).
func listen(addr string) (net.PacketConn, net.Listener, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dns address %q: %w", addr, err)
	}
	// NOTE: a port the kernel picks for UDP may be taken for TCP: pick again.
	for tries := 0; ; tries++ {
		pc, ln, err := listenBoth(addr)
		if err == nil || port != "0" || tries == 9 || !errors.Is(err, syscall.EADDRINUSE) {
			return pc, ln, err
		}
	}
}

// listenBoth binds UDP on addr, then TCP on the port UDP got, freely (see
// Listen).
func listenBoth(addr string) (net.PacketConn, net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_IP, syscall.IP_FREEBIND, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(context.Background(), "udp4", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listening on %s/udp: %w", addr, err)
	}
	bound := pc.LocalAddr().String()
	ln, err := lc.Listen(context.Background(), "tcp4", bound)
	if err != nil {
		pc.Close()
		return nil, nil, fmt.Errorf("listening on %s/tcp: %w", bound, err)
	}
	return pc, ln, nil
}

// Serve answers queries on the sockets Listen opened until ctx ends; it
// closes them.
func (s *Server) Serve(ctx context.Context, pc net.PacketConn, ln net.Listener) error {
	udp := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.handle), Net: "udp"}
	tcp := &dns.Server{Listener: ln, Handler: dns.HandlerFunc(s.handle), Net: "tcp",
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	errs := make(chan error, 2)
	for _, srv := range []*dns.Server{udp, tcp} {
		go func() { errs <- srv.ActivateAndServe() }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range []*dns.Server{udp, tcp} {
		_ = srv.ShutdownContext(shutdownCtx)
	}
	pc.Close()
	ln.Close()
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("serving dns on %s: %w", s.cfg.Addr, err)
	}
	return nil
}

// handle answers one query.
func (s *Server) handle(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery {
		s.reply(w, req, new(dns.Msg).SetRcode(req, dns.RcodeNotImplemented))
		return
	}
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	if resp, ok := s.answerLocal(req, name, q.Qtype); ok {
		s.reply(w, req, resp)
		return
	}
	_, tcp := w.RemoteAddr().(*net.TCPAddr)
	s.reply(w, req, s.forward(req, tcp))
}

// answerLocal answers from the Zone: any name of the cluster domain (an
// unknown one is NXDOMAIN), and reverse names the Zone knows. ok is false
// for what must be forwarded.
func (s *Server) answerLocal(req *dns.Msg, name string, qtype uint16) (*dns.Msg, bool) {
	inDomain := dns.IsSubDomain(s.domain, name)
	if !inDomain && !strings.HasSuffix(name, ".in-addr.arpa.") {
		return nil, false
	}
	answer, extra, exists := s.cfg.Zone.Lookup(name, qtype)
	if !inDomain && !exists {
		return nil, false // a reverse name of the Zone's: the host's resolvers may know it
	}
	resp := new(dns.Msg).SetReply(req)
	resp.Authoritative = true
	resp.Answer, resp.Extra = answer, extra
	if opt := req.IsEdns0(); opt != nil {
		resp.SetEdns0(max(opt.UDPSize(), dns.MinMsgSize), false) // RFC 6891: an EDNS query gets an EDNS answer
	}
	switch {
	case name == s.domain && qtype == dns.TypeSOA:
		resp.Answer = []dns.RR{s.soa}
	case !exists && name != s.domain:
		resp.Rcode = dns.RcodeNameError
		resp.Ns = []dns.RR{s.soa}
	case len(answer) == 0:
		resp.Ns = []dns.RR{s.soa}
	}
	return resp, true
}

// reply writes resp, truncated to what the client can take over UDP.
func (s *Server) reply(w dns.ResponseWriter, req, resp *dns.Msg) {
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = max(int(opt.UDPSize()), dns.MinMsgSize)
		}
		resp.Truncate(size)
	}
	if err := w.WriteMsg(resp); err != nil {
		logrus.WithError(err).Debug("dns: writing a reply")
	}
}
