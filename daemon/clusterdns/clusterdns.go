// Package clusterdns is skiffd's cluster DNS, the role CoreDNS plays in a
// cluster: a DNS server on the pod network's gateway address that answers
// the cluster domain from the Services and EndpointSlices in the store
// (zone.go) and forwards other names to the host's resolvers. It reads the
// store only, following it on package controller's skeleton.
package clusterdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/skiff-sh/skiff/daemon/controller"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/dnsserver"
)

// Config configures the cluster DNS.
type Config struct {
	Store *db.Store
	// Domain is the cluster domain (--cluster-domain).
	Domain string
	// Addr is where to serve, IP:port (the pod bridge's gateway, port 53).
	Addr string
	// Upstreams are the resolvers other names go to (the host's).
	Upstreams func() ([]string, error)
}

// DNS is the cluster DNS. Create it with New (which binds its sockets), start it with Run.
type DNS struct {
	cfg    Config
	zone   *Zone
	server *dnsserver.Server
	pc     net.PacketConn
	ln     net.Listener
	loop   *controller.Loop[struct{}] // follows the store; no keys
}

// New binds the DNS server's sockets, so that a failure fails the daemon's
// start rather than later. When another server holds the port on every
// address of the host (a dnsmasq bound to 0.0.0.0:53), the kernel refuses
// the gateway's port too: the DNS then serves on a port the kernel picks,
// which Served tells, for the service proxy to redirect Config.Addr to.
func New(cfg Config) (*DNS, error) {
	zone := NewZone(cfg.Domain)
	server, pc, ln, err := listen(cfg, zone, cfg.Addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		host, _, _ := net.SplitHostPort(cfg.Addr)
		var fallback error
		if server, pc, ln, fallback = listen(cfg, zone, net.JoinHostPort(host, "0")); fallback == nil {
			logrus.WithError(err).WithField("served", pc.LocalAddr().String()).
				Warn("cluster dns: its port is taken on every address of the host; serving on another port, to which the service proxy redirects it")
		}
		err = fallback
	}
	if err != nil {
		return nil, fmt.Errorf("cluster dns: %w", err)
	}
	d := &DNS{cfg: cfg, zone: zone, server: server, pc: pc, ln: ln}
	d.loop = controller.New(controller.Config[struct{}]{
		Name:  "cluster dns",
		Store: cfg.Store,
		Watches: []controller.Watch{
			{Resource: db.Services, OnList: d.onServiceList, OnEvent: d.onServiceEvent},
			{Resource: db.EndpointSlices, OnList: d.onSliceList, OnEvent: d.onSliceEvent},
		},
		Tasks: []func(context.Context) error{d.serve},
	})
	return d, nil
}

func listen(cfg Config, zone *Zone, addr string) (*dnsserver.Server, net.PacketConn, net.Listener, error) {
	server, err := dnsserver.New(dnsserver.Config{Addr: addr, Domain: cfg.Domain, Upstreams: cfg.Upstreams, Zone: zone})
	if err != nil {
		return nil, nil, nil, err
	}
	pc, ln, err := server.Listen()
	return server, pc, ln, err
}

// Served is the address the DNS answers on: Config.Addr, or the one it
// fell back to (see New).
func (d *DNS) Served() *net.UDPAddr {
	return d.pc.LocalAddr().(*net.UDPAddr)
}

// Run follows Services and EndpointSlices and answers queries until ctx
// ends (nil) or the store closes. It waits for all it started.
func (d *DNS) Run(ctx context.Context) error {
	err := d.loop.Run(ctx)
	// Serve closes the sockets; they stay open if it never started.
	d.pc.Close()
	d.ln.Close()
	return err
}

// serve answers queries from the zone until ctx ends.
func (d *DNS) serve(ctx context.Context) error {
	logrus.WithFields(logrus.Fields{"addr": d.cfg.Addr, "served": d.Served().String(), "domain": d.cfg.Domain}).Info("cluster dns serving")
	return d.server.Serve(ctx, d.pc, d.ln)
}

func (d *DNS) onServiceList(objs []db.Object) {
	svcs := make([]*corev1.Service, 0, len(objs))
	for _, o := range objs {
		svcs = append(svcs, o.(*corev1.Service))
	}
	d.zone.ReplaceServices(svcs)
}

func (d *DNS) onSliceList(objs []db.Object) {
	list := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		list = append(list, o.(*discoveryv1.EndpointSlice))
	}
	d.zone.ReplaceSlices(list)
}

func (d *DNS) onServiceEvent(ev db.Event) {
	svc := ev.Object.(*corev1.Service)
	if ev.Type == watch.Deleted {
		d.zone.DeleteService(svc.Namespace, svc.Name)
		return
	}
	d.zone.SetService(svc)
}

func (d *DNS) onSliceEvent(ev db.Event) {
	s := ev.Object.(*discoveryv1.EndpointSlice)
	if ev.Type == watch.Deleted {
		d.zone.DeleteSlice(s.Namespace, s.Name)
		return
	}
	d.zone.SetSlice(s)
}
