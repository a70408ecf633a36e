package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
)

// DefaultServiceCIDR is the range ClusterIPs come from when
// Config.ServiceCIDR is not set (k3s' default).
const DefaultServiceCIDR = "10.43.0.0/16"

// The allocator's errors, with kube-apiserver's texts (its ipallocator's).
var (
	errIPAllocated       = errors.New("provided IP is already allocated")
	errRangeFull         = errors.New("range is full")
	errMismatchedNetwork = errors.New("the provided network does not match the current range")
)

// serviceRange hands out ClusterIPs from the service CIDR as kube-apiserver's
// IP allocator does: never the network or broadcast address, and the first
// usable address (".1") kept for the "kubernetes" Service.
//
// NOTE: KEP-3070: the range is split at an offset (min(max(16, size/16),
// 256) addresses); dynamic allocation takes a random free address above
// it first, so that addresses below it stay free for clients that ask for
// a fixed clusterIP.
//
// NOTE: which addresses are taken is read from the stored Services
// themselves, in the transaction that stores the new one: the allocation
// is persisted with the Service (in bbolt), freed when it is deleted, and
// two creates can never get the same address.
type serviceRange struct {
	prefix      netip.Prefix
	first, last netip.Addr // usable addresses, both included
	offset      uint64     // size of the static band that starts at first
	size        uint64     // number of usable addresses
}

// CheckServiceCIDR reports whether ClusterIPs can come from p: an IPv4
// range of at least 4 addresses.
func CheckServiceCIDR(p netip.Prefix) error {
	_, err := newServiceRange(p)
	return err
}

// newServiceRange is the range of an IPv4 service CIDR of at least 4 addresses.
func newServiceRange(p netip.Prefix) (*serviceRange, error) {
	if !p.IsValid() || !p.Addr().Is4() {
		return nil, fmt.Errorf("service CIDR %s is not an IPv4 CIDR", p)
	}
	p = p.Masked()
	if p.Bits() > 30 {
		return nil, fmt.Errorf("service CIDR %s is too small", p)
	}
	hosts := uint64(1)<<(32-p.Bits()) - 2
	r := &serviceRange{prefix: p, first: p.Addr().Next(), size: hosts}
	r.last = addrAdd(r.first, hosts-1)
	switch cidrSize := hosts + 2; {
	case cidrSize <= 16:
		r.offset = 0
	default:
		r.offset = min(max(cidrSize/16, 16), 256)
	}
	return r, nil
}

// reserved is the address kept for the "kubernetes" Service.
func (r *serviceRange) reserved() netip.Addr { return r.first }

// check reports why ip cannot be allocated (nil if it can), given the
// addresses in use.
func (r *serviceRange) check(ip netip.Addr, used map[netip.Addr]bool) error {
	switch {
	case !r.prefix.Contains(ip):
		return errMismatchedNetwork
	case ip.Less(r.first) || r.last.Less(ip):
		return fmt.Errorf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, r.prefix)
	case ip == r.reserved() || used[ip]:
		return errIPAllocated
	}
	return nil
}

// next is a free address: the first free one from a random start (pick(n)
// is in [0, n)) in the dynamic band above the offset, else in the static
// band; errRangeFull if there is none.
func (r *serviceRange) next(used map[netip.Addr]bool, pick func(n uint64) uint64) (netip.Addr, error) {
	bands := [][2]uint64{{r.offset, r.size}, {0, r.offset}}
	for _, b := range bands {
		n := b[1] - b[0]
		if n == 0 {
			continue
		}
		start := pick(n)
		for i := uint64(0); i < n; i++ {
			ip := addrAdd(r.first, b[0]+(start+i)%n)
			if ip != r.reserved() && !used[ip] {
				return ip, nil
			}
		}
	}
	return netip.Addr{}, errRangeFull
}

// addrAdd is the IPv4 address ip + n.
func addrAdd(ip netip.Addr, n uint64) netip.Addr {
	b := ip.As4()
	binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(n))
	return netip.AddrFrom4(b)
}

// usedClusterIPs are the ClusterIPs of the stored Services, other than skip's.
func usedClusterIPs(tx *db.Tx, skipNS, skipName string) (map[netip.Addr]bool, error) {
	svcs, err := tx.List(db.Services, "", nil)
	if err != nil {
		return nil, err
	}
	used := map[netip.Addr]bool{}
	for _, obj := range svcs {
		svc := obj.(*corev1.Service)
		if svc.Namespace == skipNS && svc.Name == skipName {
			continue
		}
		for _, s := range svc.Spec.ClusterIPs {
			if ip, err := netip.ParseAddr(s); err == nil {
				used[ip] = true
			}
		}
	}
	return used, nil
}

// allocateClusterIP gives a new Service its ClusterIP, in the transaction
// that stores it: the one it asked for if that is free and in range, else
// a free one. Headless Services get none. The errors are kube-apiserver's:
// 422 for a requested address it cannot have, 500 for a full range.
func (s *server) allocateClusterIP(tx *db.Tx, svc *corev1.Service) error {
	if len(svc.Spec.ClusterIPs) > 0 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone {
		return nil
	}
	used, err := usedClusterIPs(tx, svc.Namespace, svc.Name)
	if err != nil {
		return err
	}
	if svc.Spec.ClusterIP == "" {
		ip, err := s.serviceRange.next(used, rand.Uint64N)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %v", err))
		}
		svc.Spec.ClusterIP = ip.String()
		svc.Spec.ClusterIPs = []string{ip.String()}
		return nil
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil {
		// NOTE: validation refused anything that is not an IP.
		return apierrors.NewInternalError(fmt.Errorf("failed to parse service IP %q", svc.Spec.ClusterIP))
	}
	if err := s.serviceRange.check(ip, used); err != nil {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, svc.Name, field.ErrorList{field.Invalid(
			field.NewPath("spec", "clusterIPs"), svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: %v", svc.Spec.ClusterIP, err))})
	}
	return nil
}
