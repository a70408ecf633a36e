package kube

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestPrepareServiceForCreate: kube's SetDefaults_Service and the Service
// registry's IP family fields on a single-stack IPv4 cluster.
func TestPrepareServiceForCreate(t *testing.T) {
	single, dual := ptr.To(corev1.IPFamilyPolicySingleStack), ptr.To(corev1.IPFamilyPolicyRequireDualStack)
	v4, v4v6 := []corev1.IPFamily{corev1.IPv4Protocol}, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	cluster := ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	tests := map[string]struct {
		spec corev1.ServiceSpec
		want corev1.ServiceSpec
	}{
		"a port": {
			spec: corev1.ServiceSpec{Selector: map[string]string{"a": "b"}, Ports: []corev1.ServicePort{{Port: 80}}},
			want: corev1.ServiceSpec{Selector: map[string]string{"a": "b"}, Type: corev1.ServiceTypeClusterIP,
				SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster, IPFamilyPolicy: single, IPFamilies: v4,
				Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}}},
		},
		"named target port, UDP": {
			spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}}},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
				InternalTrafficPolicy: cluster, IPFamilyPolicy: single, IPFamilies: v4,
				Ports: []corev1.ServicePort{{Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("dns")}}},
		},
		"ClientIP affinity": {
			spec: corev1.ServiceSpec{Selector: map[string]string{"a": "b"}, SessionAffinity: corev1.ServiceAffinityClientIP},
			want: corev1.ServiceSpec{Selector: map[string]string{"a": "b"}, Type: corev1.ServiceTypeClusterIP,
				SessionAffinity: corev1.ServiceAffinityClientIP, InternalTrafficPolicy: cluster, IPFamilyPolicy: single, IPFamilies: v4,
				SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)}}},
		},
		"clusterIP only": {
			spec: corev1.ServiceSpec{Selector: map[string]string{"a": "b"}, ClusterIP: "10.43.0.9"},
			want: corev1.ServiceSpec{Selector: map[string]string{"a": "b"}, Type: corev1.ServiceTypeClusterIP,
				SessionAffinity: corev1.ServiceAffinityNone, InternalTrafficPolicy: cluster, IPFamilyPolicy: single, IPFamilies: v4,
				ClusterIP: "10.43.0.9", ClusterIPs: []string{"10.43.0.9"}},
		},
		"headless without selector": {
			spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone},
			want: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, SessionAffinity: corev1.ServiceAffinityNone,
				InternalTrafficPolicy: cluster, IPFamilyPolicy: dual, IPFamilies: v4v6,
				ClusterIP: corev1.ClusterIPNone, ClusterIPs: []string{corev1.ClusterIPNone}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			svc := &corev1.Service{Spec: *tc.spec.DeepCopy(), Status: corev1.ServiceStatus{Conditions: []metav1.Condition{}}}
			PrepareServiceForCreate(svc)
			if diff := cmp.Diff(tc.want, svc.Spec); diff != "" {
				t.Errorf("spec (-want,+got):\n%s", diff)
			}
			if svc.Status.Conditions != nil {
				t.Errorf("status kept: %+v", svc.Status)
			}
		})
	}
}

// TestPrepareServiceForUpdate: an update that leaves the allocated
// ClusterIPs out keeps them; one of the status keeps the spec.
func TestPrepareServiceForUpdate(t *testing.T) {
	old := &corev1.Service{Spec: corev1.ServiceSpec{Selector: map[string]string{"a": "b"}, ClusterIP: "10.43.0.9",
		Ports: []corev1.ServicePort{{Port: 80}}}}
	PrepareServiceForCreate(old)
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Selector: map[string]string{"a": "b"}, Ports: []corev1.ServicePort{{Port: 8080}}}}
	PrepareServiceForUpdate(svc, old)
	if svc.Spec.ClusterIP != "10.43.0.9" || !cmp.Equal(svc.Spec.ClusterIPs, []string{"10.43.0.9"}) {
		t.Errorf("clusterIP %q clusterIPs %q, want the allocated 10.43.0.9 kept", svc.Spec.ClusterIP, svc.Spec.ClusterIPs)
	}
	if errs := ValidateServiceUpdate(svc, old); len(errs) > 0 {
		t.Errorf("ValidateServiceUpdate: %v", errs)
	}
	status := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.43.0.99"}}
	PrepareServiceForStatusUpdate(status, old)
	if status.Spec.ClusterIP != "10.43.0.9" {
		t.Errorf("a status update changed the spec: clusterIP %q", status.Spec.ClusterIP)
	}
}
