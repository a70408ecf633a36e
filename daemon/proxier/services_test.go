package proxier

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/serviceproxy"
)

func ptrTo[T any](v T) *T { return &v }

func endpoint(ip string, ready, serving, terminating bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{
		Ready: ptrTo(ready), Serving: ptrTo(serving), Terminating: ptrTo(terminating)}}
}

func TestProxiedService(t *testing.T) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.43.0.10",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}},
	}
	httpPort := []discoveryv1.EndpointPort{{Name: ptrTo("http"), Port: ptrTo(int32(8080)), Protocol: ptrTo(corev1.ProtocolTCP)}}
	dnsPort := []discoveryv1.EndpointPort{{Name: ptrTo("dns"), Port: ptrTo(int32(5353)), Protocol: ptrTo(corev1.ProtocolUDP)}}
	tests := map[string]struct {
		svc    *corev1.Service
		slices []*discoveryv1.EndpointSlice
		want   *serviceproxy.Service
	}{
		"ready endpoints per port, on the slices' port numbers": {
			svc: svc,
			slices: []*discoveryv1.EndpointSlice{
				{Ports: httpPort, Endpoints: []discoveryv1.Endpoint{endpoint("10.88.0.6", true, true, false), endpoint("10.88.0.5", true, true, false),
					endpoint("10.88.0.7", false, false, false)}},
				{Ports: dnsPort, Endpoints: []discoveryv1.Endpoint{endpoint("10.88.0.8", true, true, false)}},
			},
			want: &serviceproxy.Service{Namespace: "default", Name: "web", ClusterIP: "10.43.0.10", Ports: []serviceproxy.Port{
				{Name: "http", Protocol: "tcp", Port: 80, Endpoints: []serviceproxy.Endpoint{{IP: "10.88.0.5", Port: 8080}, {IP: "10.88.0.6", Port: 8080}}},
				{Name: "dns", Protocol: "udp", Port: 53, Endpoints: []serviceproxy.Endpoint{{IP: "10.88.0.8", Port: 5353}}},
			}},
		},
		"terminating serving endpoints drain beside ready ones": {
			svc: svc,
			slices: []*discoveryv1.EndpointSlice{{Ports: dnsPort, Endpoints: []discoveryv1.Endpoint{
				endpoint("10.88.0.8", true, true, false), endpoint("10.88.0.9", false, true, true)}}},
			want: &serviceproxy.Service{Namespace: "default", Name: "web", ClusterIP: "10.43.0.10", Ports: []serviceproxy.Port{
				{Name: "http", Protocol: "tcp", Port: 80},
				{Name: "dns", Protocol: "udp", Port: 53, Endpoints: []serviceproxy.Endpoint{{IP: "10.88.0.8", Port: 5353}},
					Draining: []serviceproxy.Endpoint{{IP: "10.88.0.9", Port: 5353}}},
			}},
		},
		"terminating serving endpoints when none is ready": {
			svc: svc,
			slices: []*discoveryv1.EndpointSlice{{Ports: httpPort, Endpoints: []discoveryv1.Endpoint{
				endpoint("10.88.0.5", false, true, true), endpoint("10.88.0.6", false, false, true)}}},
			want: &serviceproxy.Service{Namespace: "default", Name: "web", ClusterIP: "10.43.0.10", Ports: []serviceproxy.Port{
				{Name: "http", Protocol: "tcp", Port: 80, Endpoints: []serviceproxy.Endpoint{{IP: "10.88.0.5", Port: 8080}}},
				{Name: "dns", Protocol: "udp", Port: 53},
			}},
		},
		"headless is not proxied": {
			svc: &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "None"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := proxiedService(tc.svc, tc.slices)
			if tc.want == nil {
				if ok {
					t.Errorf("proxied: %+v", got)
				}
				return
			}
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
