package clusterdns

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptrTo[T any](v T) *T { return &v }

// testZone holds a ClusterIP Service "web" and a headless Service "peers"
// whose two ready endpoints are job-0 (hostname) and 10.88.0.9 (none),
// and a not-ready one.
func testZone() *Zone {
	z := NewZone("cluster.local")
	z.SetService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.43.0.10", Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}})
	z.SetService(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "peers", Namespace: "team"},
		Spec: corev1.ServiceSpec{ClusterIP: "None", Ports: []corev1.ServicePort{{Name: "p", Port: 7000, Protocol: corev1.ProtocolTCP}}}})
	z.SetSlice(&discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "peers-abc", Namespace: "team", Labels: map[string]string{discoveryv1.LabelServiceName: "peers"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptrTo("p"), Port: ptrTo(int32(7001)), Protocol: ptrTo(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.88.0.8"}, Hostname: ptrTo("job-0"), Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)}},
			{Addresses: []string{"10.88.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)}},
			{Addresses: []string{"10.88.0.7"}, Hostname: ptrTo("job-2"), Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(false)}},
		},
	})
	return z
}

// rrs renders records without their TTL and class, sorted.
func rrs(list []dns.RR) []string {
	var out []string
	for _, rr := range list {
		f := strings.Fields(rr.String())
		out = append(out, strings.Join(append([]string{f[0]}, f[3:]...), " "))
	}
	sort.Strings(out)
	return out
}

func TestZoneLookup(t *testing.T) {
	z := testZone()
	tests := map[string]struct {
		name         string
		qtype        uint16
		answer, extr []string
		exists       bool
	}{
		"clusterIP":                 {"web.default.svc.cluster.local.", dns.TypeA, []string{"web.default.svc.cluster.local. A 10.43.0.10"}, nil, true},
		"headless: ready endpoints": {"peers.team.svc.cluster.local.", dns.TypeA, []string{"peers.team.svc.cluster.local. A 10.88.0.8", "peers.team.svc.cluster.local. A 10.88.0.9"}, nil, true},
		"endpoint by hostname":      {"job-0.peers.team.svc.cluster.local.", dns.TypeA, []string{"job-0.peers.team.svc.cluster.local. A 10.88.0.8"}, nil, true},
		"endpoint by dashed IP":     {"10-88-0-9.peers.team.svc.cluster.local.", dns.TypeA, []string{"10-88-0-9.peers.team.svc.cluster.local. A 10.88.0.9"}, nil, true},
		"not ready endpoint":        {"job-2.peers.team.svc.cluster.local.", dns.TypeA, nil, nil, false},
		"AAAA of a service":         {"web.default.svc.cluster.local.", dns.TypeAAAA, nil, nil, true},
		"unknown service":           {"nope.default.svc.cluster.local.", dns.TypeA, nil, nil, false},
		"search-path miss":          {"example.com.default.svc.cluster.local.", dns.TypeA, nil, nil, false},
		"namespace":                 {"team.svc.cluster.local.", dns.TypeA, nil, nil, true},
		"SRV of a clusterIP port": {"_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV,
			[]string{"_http._tcp.web.default.svc.cluster.local. SRV 0 100 80 web.default.svc.cluster.local."},
			[]string{"web.default.svc.cluster.local. A 10.43.0.10"}, true},
		"SRV of a headless port": {"_p._tcp.peers.team.svc.cluster.local.", dns.TypeSRV,
			[]string{"_p._tcp.peers.team.svc.cluster.local. SRV 0 50 7001 10-88-0-9.peers.team.svc.cluster.local.",
				"_p._tcp.peers.team.svc.cluster.local. SRV 0 50 7001 job-0.peers.team.svc.cluster.local."},
			[]string{"10-88-0-9.peers.team.svc.cluster.local. A 10.88.0.9", "job-0.peers.team.svc.cluster.local. A 10.88.0.8"}, true},
		"SRV of an unknown port": {"_dns._udp.web.default.svc.cluster.local.", dns.TypeSRV, nil, nil, false},
		"pod by dashed IP":       {"10-88-0-5.default.pod.cluster.local.", dns.TypeA, []string{"10-88-0-5.default.pod.cluster.local. A 10.88.0.5"}, nil, true},
		"reverse of a clusterIP": {"10.0.43.10.in-addr.arpa.", dns.TypePTR, []string{"10.0.43.10.in-addr.arpa. PTR web.default.svc.cluster.local."}, nil, true},
		"reverse of an endpoint": {"8.0.88.10.in-addr.arpa.", dns.TypePTR, []string{"8.0.88.10.in-addr.arpa. PTR job-0.peers.team.svc.cluster.local."}, nil, true},
		"unknown reverse":        {"1.2.0.192.in-addr.arpa.", dns.TypePTR, nil, nil, false},
		"outside the zone":       {"example.com.", dns.TypeA, nil, nil, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			answer, extra, exists := z.Lookup(tc.name, tc.qtype)
			if exists != tc.exists {
				t.Errorf("exists = %v, want %v", exists, tc.exists)
			}
			if diff := cmp.Diff(tc.answer, rrs(answer)); diff != "" {
				t.Errorf("answer (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.extr, rrs(extra)); diff != "" {
				t.Errorf("extra (-want,+got):\n%s", diff)
			}
		})
	}

	// Slices and Services come and go.
	z.DeleteSlice("team", "peers-abc")
	if ans, _, ok := z.Lookup("peers.team.svc.cluster.local.", dns.TypeA); !ok || len(ans) != 0 {
		t.Errorf("without slices: %v %v", ans, ok)
	}
	z.DeleteService("default", "web")
	if _, _, ok := z.Lookup("web.default.svc.cluster.local.", dns.TypeA); ok {
		t.Errorf("deleted service still exists")
	}
}
