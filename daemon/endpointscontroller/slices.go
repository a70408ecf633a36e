package endpointscontroller

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/kube"
)

// SliceController is the value of the endpointslice.kubernetes.io/managed-by
// label on the EndpointSlices this controller writes (kube's EndpointSlice
// controller's).
const SliceController = "endpointslice-controller.k8s.io"

// maxEndpointsPerSlice is kube-controller-manager's default
// --max-endpoints-per-slice.
const maxEndpointsPerSlice = 100

// sliceGroup is the endpoints that serve one set of ports.
type sliceGroup struct {
	ports     []discoveryv1.EndpointPort
	endpoints []discoveryv1.Endpoint
}

// sliceGroups are the pods' endpoints as kube's EndpointSlice controller
// makes them, grouped by the ports they serve: every pod with an IP that
// has not finished, terminating ones included, with its conditions
// (ready = serving and not terminating, or publishNotReadyAddresses).
func sliceGroups(svc *corev1.Service, pods []*corev1.Pod) map[string]*sliceGroup {
	groups := map[string]*sliceGroup{}
	for _, pod := range pods {
		if !shouldPodBeInEndpoints(pod, true) {
			continue
		}
		ip, ok := podIPv4(pod)
		if !ok {
			continue
		}
		ports := slicePorts(svc, pod)
		key := slicePortsKey(ports)
		g := groups[key]
		if g == nil {
			g = &sliceGroup{ports: ports}
			groups[key] = g
		}
		g.endpoints = append(g.endpoints, podEndpoint(svc, pod, ip))
	}
	for _, g := range groups {
		slices.SortFunc(g.endpoints, func(a, b discoveryv1.Endpoint) int {
			return cmp.Or(cmp.Compare(a.Addresses[0], b.Addresses[0]), cmp.Compare(a.TargetRef.UID, b.TargetRef.UID))
		})
	}
	return groups
}

// podEndpoint is the pod as an endpoint of svc.
func podEndpoint(svc *corev1.Service, pod *corev1.Pod, ip string) discoveryv1.Endpoint {
	serving := kube.IsPodReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ep := discoveryv1.Endpoint{
		Addresses: []string{ip},
		Conditions: discoveryv1.EndpointConditions{
			Ready:       ptrTo(svc.Spec.PublishNotReadyAddresses || (serving && !terminating)),
			Serving:     ptrTo(serving),
			Terminating: ptrTo(terminating),
		},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		ep.NodeName = ptrTo(pod.Spec.NodeName)
	}
	if shouldSetHostname(pod, svc) {
		ep.Hostname = ptrTo(pod.Spec.Hostname)
	}
	return ep
}

// slicePorts are the pod's ports for the Service's ports it serves, in
// the Service's order.
func slicePorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	ports := []discoveryv1.EndpointPort{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		port, err := findPort(pod, sp)
		if err != nil {
			continue
		}
		ports = append(ports, discoveryv1.EndpointPort{Name: ptrTo(sp.Name), Port: ptrTo(port),
			Protocol: ptrTo(sp.Protocol), AppProtocol: sp.AppProtocol})
	}
	return ports
}

// slicePortsKey identifies a set of slice ports.
func slicePortsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%d/%s/%s;", deref(p.Name), deref(p.Port), deref(p.Protocol), deref(p.AppProtocol))
	}
	return b.String()
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// slicePlan is what to write so that a Service's slices are what its pods make.
type slicePlan struct {
	create, update, delete []*discoveryv1.EndpointSlice
}

func (p slicePlan) empty() bool { return len(p.create)+len(p.update)+len(p.delete) == 0 }

// planSlices reconciles the existing slices of svc (those this controller
// manages) with its pods: each set of ports gets its endpoints in slices
// of at most maxEndpointsPerSlice, reusing the existing slices of the same
// ports in name order; slices left over go. A Service without endpoints
// keeps one empty placeholder slice, as kube's controller does.
func planSlices(svc *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice) slicePlan {
	existing = slices.Clone(existing)
	slices.SortFunc(existing, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	byKey := map[string][]*discoveryv1.EndpointSlice{}
	var keysSeen []string
	for _, s := range existing {
		k := slicePortsKey(s.Ports)
		if _, ok := byKey[k]; !ok {
			keysSeen = append(keysSeen, k)
		}
		byKey[k] = append(byKey[k], s)
	}
	var plan slicePlan
	groups := sliceGroups(svc, pods)
	if len(groups) == 0 {
		want := newSlice(svc, []discoveryv1.EndpointPort{}, []discoveryv1.Endpoint{})
		if len(existing) == 0 {
			plan.create = []*discoveryv1.EndpointSlice{want}
			return plan
		}
		if s, changed := updatedSlice(existing[0], want); changed {
			plan.update = []*discoveryv1.EndpointSlice{s}
		}
		plan.delete = existing[1:]
		return plan
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		olds := byKey[key]
		delete(byKey, key)
		for i, chunk := range chunks(g.endpoints, maxEndpointsPerSlice) {
			want := newSlice(svc, g.ports, chunk)
			if i >= len(olds) {
				plan.create = append(plan.create, want)
				continue
			}
			if s, changed := updatedSlice(olds[i], want); changed {
				plan.update = append(plan.update, s)
			}
		}
		if n := len(chunks(g.endpoints, maxEndpointsPerSlice)); len(olds) > n {
			plan.delete = append(plan.delete, olds[n:]...)
		}
	}
	for _, k := range keysSeen {
		plan.delete = append(plan.delete, byKey[k]...)
	}
	return plan
}

// chunks splits eps into slices of at most n; none gives one empty chunk.
func chunks(eps []discoveryv1.Endpoint, n int) [][]discoveryv1.Endpoint {
	if len(eps) == 0 {
		return [][]discoveryv1.Endpoint{{}}
	}
	var out [][]discoveryv1.Endpoint
	for len(eps) > 0 {
		k := min(n, len(eps))
		out = append(out, eps[:k:k])
		eps = eps[k:]
	}
	return out
}

// newSlice is a new EndpointSlice of svc: named after it, owned by it,
// labelled as kube labels them.
func newSlice(svc *corev1.Service, ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       svc.Namespace,
			GenerateName:    svc.Name + "-",
			Labels:          sliceLabels(svc),
			OwnerReferences: []metav1.OwnerReference{serviceOwner(svc)},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
		Endpoints:   eps,
	}
}

// updatedSlice is have with want's content, and whether that changes it.
func updatedSlice(have, want *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, bool) {
	s := have.DeepCopy()
	s.Labels, s.OwnerReferences = want.Labels, want.OwnerReferences
	s.AddressType, s.Ports, s.Endpoints = want.AddressType, want.Ports, want.Endpoints
	changed := !equality.Semantic.DeepEqual(s.Labels, have.Labels) ||
		!equality.Semantic.DeepEqual(s.OwnerReferences, have.OwnerReferences) ||
		s.AddressType != have.AddressType ||
		!equality.Semantic.DeepEqual(s.Ports, have.Ports) ||
		!equality.Semantic.DeepEqual(s.Endpoints, have.Endpoints)
	return s, changed
}

// sliceLabels are the Service's labels with the slice's own: the Service's
// name, this controller, and the headless marker.
func sliceLabels(svc *corev1.Service) map[string]string {
	l := map[string]string{}
	for k, v := range svc.Labels {
		if k != discoveryv1.LabelServiceName && k != discoveryv1.LabelManagedBy && k != corev1.IsHeadlessService {
			l[k] = v
		}
	}
	if !isServiceIPSet(svc) {
		l[corev1.IsHeadlessService] = ""
	}
	l[discoveryv1.LabelServiceName] = svc.Name
	l[discoveryv1.LabelManagedBy] = SliceController
	return l
}

// serviceOwner is the controller reference to svc.
func serviceOwner(svc *corev1.Service) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
		Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}
}
