package endpointscontroller

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// testPod is a running pod with an IP; opts change it.
func testPod(name, ip string, ready bool, opts ...func(*corev1.Pod)) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func testService(opts ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "svc-uid", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.43.0.10", ClusterIPs: []string{"10.43.0.10"},
			Ports: []corev1.ServicePort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}}},
	}
	for _, o := range opts {
		o(svc)
	}
	return svc
}

func addrs(ips ...string) []corev1.EndpointAddress {
	var out []corev1.EndpointAddress
	for _, ip := range ips {
		out = append(out, corev1.EndpointAddress{IP: ip})
	}
	return out
}

// summary drops targetRef and nodeName, which every case has alike.
func summary(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	out := []corev1.EndpointSubset{}
	for _, ss := range subsets {
		strip := func(list []corev1.EndpointAddress) []corev1.EndpointAddress {
			var l []corev1.EndpointAddress
			for _, a := range list {
				l = append(l, corev1.EndpointAddress{IP: a.IP, Hostname: a.Hostname})
			}
			return l
		}
		out = append(out, corev1.EndpointSubset{Addresses: strip(ss.Addresses), NotReadyAddresses: strip(ss.NotReadyAddresses), Ports: ss.Ports})
	}
	return out
}

func TestEndpointSubsets(t *testing.T) {
	webPort := []corev1.EndpointPort{{Name: "web", Port: 8080, Protocol: corev1.ProtocolTCP}}
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} }
	tests := map[string]struct {
		svc  *corev1.Service
		pods []*corev1.Pod
		want []corev1.EndpointSubset
	}{
		"ready and not ready": {
			svc:  testService(),
			pods: []*corev1.Pod{testPod("b", "10.88.0.3", true), testPod("a", "10.88.0.2", false), testPod("c", "10.88.0.1", true)},
			want: []corev1.EndpointSubset{{Addresses: addrs("10.88.0.1", "10.88.0.3"), NotReadyAddresses: addrs("10.88.0.2"), Ports: webPort}},
		},
		"finished, terminating and IP-less pods are no endpoints": {
			svc: testService(),
			pods: []*corev1.Pod{
				testPod("done", "10.88.0.4", false, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				testPod("going", "10.88.0.5", true, deleting),
				testPod("new", "", false, func(p *corev1.Pod) { p.Status.PodIPs = nil }),
			},
			want: []corev1.EndpointSubset{},
		},
		"publishNotReadyAddresses: every pod is ready, terminating ones too": {
			svc:  testService(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			pods: []*corev1.Pod{testPod("a", "10.88.0.2", false), testPod("going", "10.88.0.5", true, deleting)},
			want: []corev1.EndpointSubset{{Addresses: addrs("10.88.0.2", "10.88.0.5"), Ports: webPort}},
		},
		"a pod without the named port is left out": {
			svc:  testService(),
			pods: []*corev1.Pod{testPod("a", "10.88.0.2", true, func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })},
			want: []corev1.EndpointSubset{},
		},
		"headless without ports; hostname under its subdomain": {
			svc: testService(func(s *corev1.Service) {
				s.Name, s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.Ports = "peers", "None", []string{"None"}, nil
			}),
			pods: []*corev1.Pod{
				testPod("job-0", "10.88.0.7", true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "job-0", "peers" }),
				testPod("other", "10.88.0.8", true, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "other", "elsewhere" }),
			},
			want: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.88.0.7", Hostname: "job-0"}, {IP: "10.88.0.8"}}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, summary(endpointSubsets(tc.svc, tc.pods))); diff != "" {
				t.Errorf("subsets (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestDesiredEndpointsLabelsAndCapacity(t *testing.T) {
	svc := testService(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"} })
	var pods []*corev1.Pod
	for i := 0; i < 1002; i++ {
		pods = append(pods, testPod(fmt.Sprintf("p%d", i), fmt.Sprintf("10.88.%d.%d", i/250, i%250+1), i%2 == 0))
	}
	ep := desiredEndpoints(svc, pods, nil)
	want := map[string]string{"team": "a", corev1.IsHeadlessService: "", EndpointsManagedBy: EndpointsController}
	if diff := cmp.Diff(want, ep.Labels); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	n := 0
	for _, ss := range ep.Subsets {
		n += len(ss.Addresses) + len(ss.NotReadyAddresses)
		if len(ss.Addresses) != 501 {
			t.Errorf("ready addresses = %d, want all 501 kept", len(ss.Addresses))
		}
	}
	if n != maxEndpointsAddresses || ep.Annotations[corev1.EndpointsOverCapacity] != "truncated" {
		t.Errorf("%d addresses, annotations %v; want %d and over-capacity", n, ep.Annotations, maxEndpointsAddresses)
	}
}

func TestPlanSlices(t *testing.T) {
	svc := testService()
	three := []*corev1.Pod{testPod("a", "10.88.0.2", true), testPod("b", "10.88.0.3", false), testPod("c", "10.88.0.4", true,
		func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{} })}

	plan := planSlices(svc, three, nil)
	if len(plan.create) != 1 || len(plan.update)+len(plan.delete) != 0 {
		t.Fatalf("first plan = %+v", plan)
	}
	s := plan.create[0]
	wantLabels := map[string]string{"team": "a", discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: SliceController}
	if diff := cmp.Diff(wantLabels, s.Labels); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	if s.GenerateName != "web-" || s.AddressType != discoveryv1.AddressTypeIPv4 || len(s.OwnerReferences) != 1 ||
		s.OwnerReferences[0].UID != "svc-uid" || !*s.OwnerReferences[0].Controller {
		t.Errorf("slice meta = %+v", s.ObjectMeta)
	}
	wantPorts := []discoveryv1.EndpointPort{{Name: ptrTo("web"), Port: ptrTo(int32(8080)), Protocol: ptrTo(corev1.ProtocolTCP)}}
	if diff := cmp.Diff(wantPorts, s.Ports); diff != "" {
		t.Errorf("ports (-want,+got):\n%s", diff)
	}
	type cond struct{ Ready, Serving, Terminating bool }
	var got []cond
	for _, ep := range s.Endpoints {
		got = append(got, cond{*ep.Conditions.Ready, *ep.Conditions.Serving, *ep.Conditions.Terminating})
	}
	if diff := cmp.Diff([]cond{{true, true, false}, {false, false, false}, {false, true, true}}, got); diff != "" {
		t.Errorf("conditions of a (ready), b (not ready), c (terminating) (-want,+got):\n%s", diff)
	}

	// The same pods again change nothing; a pod less updates the slice.
	s.Name = "web-abcde"
	if plan := planSlices(svc, three, []*discoveryv1.EndpointSlice{s}); !plan.empty() {
		t.Errorf("unchanged pods: plan %+v", plan)
	}
	plan = planSlices(svc, three[:1], []*discoveryv1.EndpointSlice{s})
	if len(plan.update) != 1 || len(plan.update[0].Endpoints) != 1 || plan.update[0].Name != "web-abcde" {
		t.Errorf("a pod less: plan %+v", plan)
	}

	// No pods: one placeholder, without ports or endpoints.
	plan = planSlices(svc, nil, []*discoveryv1.EndpointSlice{s})
	if len(plan.update) != 1 || len(plan.update[0].Endpoints) != 0 || plan.update[0].Ports == nil || len(plan.update[0].Ports) != 0 {
		t.Errorf("no pods: plan %+v", plan)
	}

	// 150 pods need two slices.
	var many []*corev1.Pod
	for i := 0; i < 150; i++ {
		many = append(many, testPod(fmt.Sprintf("p%d", i), fmt.Sprintf("10.88.1.%d", i+1), true))
	}
	plan = planSlices(svc, many, []*discoveryv1.EndpointSlice{s})
	if len(plan.update) != 1 || len(plan.create) != 1 || len(plan.update[0].Endpoints)+len(plan.create[0].Endpoints) != 150 {
		t.Errorf("150 pods: %d updates, %d creates", len(plan.update), len(plan.create))
	}
}
