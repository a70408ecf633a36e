package dnsserver

import (
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/sirupsen/logrus"
)

// forwardDeadline bounds the wait for upstreams on one query, so that a
// client (whose resolver gives up after 5s by default) gets SERVFAIL
// instead of silence when none answers.
const forwardDeadline = 4 * time.Second

// forward asks the upstreams in turn (over TCP if the client used TCP or
// the UDP answer was truncated) and returns the first answer, or SERVFAIL.
func (s *Server) forward(req *dns.Msg, tcp bool) *dns.Msg {
	upstreams, err := s.cfg.Upstreams()
	if err != nil {
		logrus.WithError(err).Warn("dns: reading the upstream resolvers")
	}
	deadline := time.Now().Add(forwardDeadline)
	for _, up := range upstreams {
		addr := upstreamAddr(up)
		if addr == "" || addr == s.cfg.Addr {
			continue // never forward to ourselves
		}
		timeout := min(s.cfg.ForwardTimeout, time.Until(deadline))
		if timeout <= 0 {
			break
		}
		resp, err := s.exchange(req, addr, tcp, timeout)
		if err != nil {
			logrus.WithError(err).WithField("upstream", addr).Debug("dns: forwarding")
			continue
		}
		resp.Id = req.Id
		return resp
	}
	return new(dns.Msg).SetRcode(req, dns.RcodeServerFailure)
}

// exchange sends req to one upstream, waiting at most timeout.
func (s *Server) exchange(req *dns.Msg, addr string, tcp bool, timeout time.Duration) (*dns.Msg, error) {
	c := &dns.Client{Net: "udp", Timeout: timeout, UDPSize: dns.DefaultMsgSize}
	if tcp {
		c.Net = "tcp"
	}
	resp, _, err := c.Exchange(req.Copy(), addr)
	if err == nil && resp.Truncated && !tcp {
		c.Net = "tcp"
		resp, _, err = c.Exchange(req.Copy(), addr)
	}
	return resp, err
}

// upstreamAddr is "IP:53" for "IP", as is for "IP:port", "" if neither.
func upstreamAddr(s string) string {
	if ip := net.ParseIP(strings.Trim(s, "[]")); ip != nil {
		return net.JoinHostPort(ip.String(), "53")
	}
	if host, _, err := net.SplitHostPort(s); err == nil && net.ParseIP(host) != nil {
		return s
	}
	return ""
}
