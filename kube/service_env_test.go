package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testService(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

// envNames are the names of env, in order.
func envNames(env []corev1.EnvVar) []string {
	var out []string
	for _, e := range env {
		out = append(out, e.Name)
	}
	return out
}

func TestServiceLinkEnv(t *testing.T) {
	api := testService("default", "kubernetes", "10.43.0.1", corev1.ServicePort{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP})
	web := testService("team", "web-app", "10.43.0.9", corev1.ServicePort{Port: 8080, Protocol: corev1.ProtocolUDP})
	headless := testService("team", "peers", corev1.ClusterIPNone, corev1.ServicePort{Port: 80})
	external := testService("team", "ext", "")
	apiEnv := []string{"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBERNETES_SERVICE_PORT_HTTPS", "KUBERNETES_PORT",
		"KUBERNETES_PORT_443_TCP", "KUBERNETES_PORT_443_TCP_PROTO", "KUBERNETES_PORT_443_TCP_PORT", "KUBERNETES_PORT_443_TCP_ADDR"}
	webEnv := []string{"WEB_APP_SERVICE_HOST", "WEB_APP_SERVICE_PORT", "WEB_APP_PORT",
		"WEB_APP_PORT_8080_UDP", "WEB_APP_PORT_8080_UDP_PROTO", "WEB_APP_PORT_8080_UDP_PORT", "WEB_APP_PORT_8080_UDP_ADDR"}
	tests := map[string]struct {
		ns    string
		links bool
		svcs  []*corev1.Service
		want  []string
	}{
		"links: the namespace's Services and the API's": {"team", true, []*corev1.Service{web, headless, external, api}, append(append([]string{}, apiEnv...), webEnv...)},
		"no links: the API's only":                      {"team", false, []*corev1.Service{web, api}, apiEnv},
		"another namespace's Services are not linked":   {"other", true, []*corev1.Service{web, api}, apiEnv},
		"the default namespace":                         {"default", true, []*corev1.Service{api, api}, apiEnv},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, envNames(ServiceLinkEnv(tc.ns, tc.links, tc.svcs))); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
		})
	}
	got := ServiceLinkEnv("team", true, []*corev1.Service{web})
	want := []corev1.EnvVar{{Name: "WEB_APP_SERVICE_HOST", Value: "10.43.0.9"}, {Name: "WEB_APP_SERVICE_PORT", Value: "8080"},
		{Name: "WEB_APP_PORT", Value: "udp://10.43.0.9:8080"}, {Name: "WEB_APP_PORT_8080_UDP", Value: "udp://10.43.0.9:8080"},
		{Name: "WEB_APP_PORT_8080_UDP_PROTO", Value: "udp"}, {Name: "WEB_APP_PORT_8080_UDP_PORT", Value: "8080"},
		{Name: "WEB_APP_PORT_8080_UDP_ADDR", Value: "10.43.0.9"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	// A Service of the pod's namespace named like the API's replaces it.
	own := testService("team", "kubernetes", "10.43.0.7", corev1.ServicePort{Port: 80, Protocol: corev1.ProtocolTCP})
	if got := ServiceLinkEnv("team", true, []*corev1.Service{api, own}); got[0].Value != "10.43.0.7" {
		t.Errorf("KUBERNETES_SERVICE_HOST %q, want the namespace's own Service", got[0].Value)
	}
}
