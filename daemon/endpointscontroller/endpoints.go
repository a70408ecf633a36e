package endpointscontroller

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/kube"
)

// Kubernetes' names and limits for core/v1 Endpoints.
const (
	// EndpointsManagedBy labels the Endpoints this controller writes.
	EndpointsManagedBy = "endpoints.kubernetes.io/managed-by"
	// EndpointsController is the value of that label (kube's endpoints controller's name).
	EndpointsController = "endpoint-controller"
	// maxEndpointsAddresses is how many addresses an Endpoints object holds
	// before it is truncated (and annotated over-capacity).
	maxEndpointsAddresses = 1000
)

// desiredEndpoints is the Endpoints object of svc selecting pods, as kube's
// endpoints controller writes it, on top of current (nil if none): the
// Service's labels (with the headless and managed-by labels), one subset
// per set of ports, ready pods in addresses and the others in
// notReadyAddresses (all of them ready with publishNotReadyAddresses).
func desiredEndpoints(svc *corev1.Service, pods []*corev1.Pod, current *corev1.Endpoints) *corev1.Endpoints {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace}}
	if current != nil {
		ep = current.DeepCopy()
	}
	ep.Labels = maps.Clone(svc.Labels)
	if ep.Labels == nil {
		ep.Labels = map[string]string{}
	}
	delete(ep.Labels, corev1.IsHeadlessService)
	if !isServiceIPSet(svc) {
		ep.Labels[corev1.IsHeadlessService] = ""
	}
	ep.Labels[EndpointsManagedBy] = EndpointsController
	ep.Subsets = endpointSubsets(svc, pods)
	if ep.Annotations != nil {
		delete(ep.Annotations, corev1.EndpointsOverCapacity)
	}
	if truncateSubsets(&ep.Subsets, maxEndpointsAddresses) {
		if ep.Annotations == nil {
			ep.Annotations = map[string]string{}
		}
		ep.Annotations[corev1.EndpointsOverCapacity] = "truncated"
	}
	if len(ep.Annotations) == 0 {
		ep.Annotations = nil
	}
	return ep
}

// endpointsChanged reports whether writing want over have changes anything.
func endpointsChanged(want, have *corev1.Endpoints) bool {
	return have == nil || !equality.Semantic.DeepEqual(want.Subsets, have.Subsets) ||
		!equality.Semantic.DeepEqual(want.Labels, have.Labels) || !equality.Semantic.DeepEqual(want.Annotations, have.Annotations)
}

// endpointSubsets groups the pods' addresses by the ports they serve,
// in kube's canonical order (addresses by IP, subsets by their first
// address).
func endpointSubsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	type group struct {
		ports           []corev1.EndpointPort
		ready, notReady []corev1.EndpointAddress
	}
	groups := map[string]*group{}
	for _, pod := range pods {
		if !shouldPodBeInEndpoints(pod, svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		ip, ok := podIPv4(pod)
		if !ok {
			continue
		}
		addr := corev1.EndpointAddress{IP: ip, NodeName: ptrTo(pod.Spec.NodeName),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}}
		if shouldSetHostname(pod, svc) {
			addr.Hostname = pod.Spec.Hostname
		}
		var ports []corev1.EndpointPort
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, err := findPort(pod, sp)
			if err != nil {
				continue
			}
			ports = append(ports, corev1.EndpointPort{Name: sp.Name, Port: port, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol})
		}
		if len(svc.Spec.Ports) > 0 && len(ports) == 0 {
			continue // serves none of the Service's ports
		}
		if len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP != corev1.ClusterIPNone {
			continue // only headless Services may have no ports
		}
		slices.SortFunc(ports, func(a, b corev1.EndpointPort) int {
			return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
		})
		key := portsKey(ports)
		g := groups[key]
		if g == nil {
			g = &group{ports: ports}
			groups[key] = g
		}
		if svc.Spec.PublishNotReadyAddresses || kube.IsPodReady(pod) {
			g.ready = append(g.ready, addr)
		} else {
			g.notReady = append(g.notReady, addr)
		}
	}
	subsets := []corev1.EndpointSubset{}
	for _, g := range groups {
		byIP := func(a, b corev1.EndpointAddress) int {
			return cmp.Or(cmp.Compare(a.IP, b.IP), cmp.Compare(a.TargetRef.UID, b.TargetRef.UID))
		}
		slices.SortFunc(g.ready, byIP)
		slices.SortFunc(g.notReady, byIP)
		subsets = append(subsets, corev1.EndpointSubset{Addresses: g.ready, NotReadyAddresses: g.notReady, Ports: g.ports})
	}
	slices.SortFunc(subsets, func(a, b corev1.EndpointSubset) int {
		return cmp.Compare(firstIP(a), firstIP(b))
	})
	return subsets
}

func firstIP(ss corev1.EndpointSubset) string {
	if len(ss.Addresses) > 0 {
		return ss.Addresses[0].IP
	}
	if len(ss.NotReadyAddresses) > 0 {
		return ss.NotReadyAddresses[0].IP
	}
	return ""
}

// portsKey identifies a set of (sorted) endpoint ports.
func portsKey(ports []corev1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		app := ""
		if p.AppProtocol != nil {
			app = *p.AppProtocol
		}
		fmt.Fprintf(&b, "%s/%d/%s/%s;", p.Name, p.Port, p.Protocol, app)
	}
	return b.String()
}

// truncateSubsets keeps at most max addresses, the ready ones first (the
// subsets left empty go), and reports whether it dropped any.
func truncateSubsets(subsets *[]corev1.EndpointSubset, max int) bool {
	total := 0
	for _, ss := range *subsets {
		total += len(ss.Addresses) + len(ss.NotReadyAddresses)
	}
	if total <= max {
		return false
	}
	defer func() {
		*subsets = slices.DeleteFunc(*subsets, func(ss corev1.EndpointSubset) bool {
			return len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0
		})
	}()
	subs := *subsets
	left := max
	for i := range subs {
		n := min(len(subs[i].Addresses), left)
		subs[i].Addresses = subs[i].Addresses[:n]
		left -= n
	}
	for i := range subs {
		n := min(len(subs[i].NotReadyAddresses), left)
		subs[i].NotReadyAddresses = subs[i].NotReadyAddresses[:n]
		left -= n
	}
	return true
}

func ptrTo[T any](v T) *T { return &v }
