package daemon

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/skiff-sh/skiff/api"
	"github.com/skiff-sh/skiff/daemon/clusterdns"
	"github.com/skiff-sh/skiff/daemon/endpointscontroller"
	"github.com/skiff-sh/skiff/daemon/proxier"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/serviceproxy"
)

// DefaultClusterDomain is the default --cluster-domain.
const DefaultClusterDomain = network.DefaultClusterDomain

// serviceNetwork is how Services reach pods: the ClusterIP range, the
// cluster DNS address and domain.
type serviceNetwork struct {
	cidr    netip.Prefix
	podCIDR string
	bridge  string
	dnsIP   string
	domain  string
}

// checkServiceNetwork validates the Service flags, as skiffd starts:
// an IPv4 --service-cidr that overlaps neither the pod subnet nor a route
// of the host (its DNAT would hide those addresses), a valid
// --cluster-domain.
func checkServiceNetwork(cfg Config) (serviceNetwork, error) {
	sn := serviceNetwork{podCIDR: cfg.PodSubnet, bridge: cfg.PodBridge, domain: cfg.ClusterDomain}
	if sn.podCIDR == "" {
		sn.podCIDR = network.DefaultSubnet
	}
	if sn.bridge == "" {
		sn.bridge = network.DefaultBridge
	}
	if sn.domain == "" {
		sn.domain = DefaultClusterDomain
	}
	sn.domain = strings.TrimSuffix(strings.ToLower(sn.domain), ".")
	if msgs := validation.IsDNS1123Subdomain(sn.domain); len(msgs) > 0 {
		return sn, fmt.Errorf("--cluster-domain %q: %s", cfg.ClusterDomain, strings.Join(msgs, "; "))
	}
	cidr := cfg.ServiceCIDR
	if cidr == "" {
		cidr = api.DefaultServiceCIDR
	}
	p, err := netip.ParsePrefix(cidr)
	if err == nil {
		err = api.CheckServiceCIDR(p)
	}
	if err != nil {
		return sn, fmt.Errorf("--service-cidr %q: %w", cidr, err)
	}
	sn.cidr = p.Masked()
	pod, err := netip.ParsePrefix(sn.podCIDR)
	if err != nil {
		return sn, fmt.Errorf("--pod-subnet %q: %w", sn.podCIDR, err)
	}
	if sn.cidr.Overlaps(pod) {
		return sn, fmt.Errorf("--service-cidr %s overlaps --pod-subnet %s: give Services a range of their own", sn.cidr, pod.Masked())
	}
	_, ipnet, _ := net.ParseCIDR(sn.cidr.String())
	route, clash, err := network.HostRouteOverlap(ipnet, sn.bridge)
	if err != nil {
		return sn, err
	}
	if clash {
		return sn, fmt.Errorf("--service-cidr %s overlaps the host route %s: its ClusterIPs would hide those addresses; choose a range the host does not use",
			sn.cidr, route)
	}
	if sn.dnsIP, err = network.GatewayIP(sn.podCIDR); err != nil {
		return sn, err
	}
	return sn, nil
}

// dnsRedirect is the portal that sends the cluster DNS's address (the
// gateway's port 53, which pods' resolv.conf names) to where it is
// served, when that is another port (clusterdns.New); none otherwise.
func dnsRedirect(sn serviceNetwork, served *net.UDPAddr) []serviceproxy.Service {
	if served.Port == 53 {
		return nil
	}
	to := []serviceproxy.Endpoint{{IP: sn.dnsIP, Port: int32(served.Port)}}
	return []serviceproxy.Service{{Namespace: "kube-system", Name: "skiff-cluster-dns", ClusterIP: sn.dnsIP, Ports: []serviceproxy.Port{
		{Name: "dns", Protocol: "udp", Port: 53, Endpoints: to},
		{Name: "dns-tcp", Protocol: "tcp", Port: 53, Endpoints: to},
	}}}
}

// startServices starts what makes Services work: the endpoints
// controller, the cluster DNS (bound now, so that a taken address fails
// the start) and the service proxy (skipped, loudly, without iptables).
func startServices(store *db.Store, sn serviceNetwork, resolvConf string, goRun func(string, func(context.Context) error)) error {
	dns, err := clusterdns.New(clusterdns.Config{Store: store, Domain: sn.domain, Addr: net.JoinHostPort(sn.dnsIP, "53"),
		Upstreams: network.Upstreams(resolvConf)})
	if err != nil {
		return err
	}
	goRun("endpoints controller", endpointscontroller.New(endpointscontroller.Config{Store: store}).Run)
	goRun("cluster dns", dns.Run)
	masqueradeAll := !serviceproxy.EnableBridgeNetfilter()
	if masqueradeAll {
		logrus.Warn("bridged traffic bypasses iptables (br_netfilter not loaded): all Service traffic is masqueraded")
	}
	rules, err := serviceproxy.New(serviceproxy.Config{Bridge: sn.bridge, PodCIDR: sn.podCIDR, MasqueradeAll: masqueradeAll})
	redirect := dnsRedirect(sn, dns.Served())
	if err != nil && redirect != nil {
		return fmt.Errorf("the cluster DNS's port is taken and cannot be redirected: %w", err)
	}
	if err != nil {
		logrus.WithError(err).Error("ClusterIP Services will not forward")
		return nil
	}
	goRun("service proxy", proxier.New(proxier.Config{Store: store, Syncer: rules, Own: redirect}).Run)
	return nil
}
