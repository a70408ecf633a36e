package api

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const servicesPath = "/api/v1/namespaces/default/services"

// svcJSON is a Service named name with the given spec (JSON).
func svcJSON(name, spec string) string {
	return `{"apiVersion":"v1","kind":"Service","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
}

func decodeService(t *testing.T, body string) *corev1.Service {
	t.Helper()
	var svc corev1.Service
	mustJSON(t, body, &svc)
	return &svc
}

func TestServiceDefaults(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "POST", servicesPath, svcJSON("web", `{"selector":{"app":"web"},"ports":[{"port":80}]}`))
	if r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.body)
	}
	svc := decodeService(t, r.body)
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || !netip.MustParsePrefix(DefaultServiceCIDR).Contains(ip) || ip == netip.MustParseAddr("10.43.0.1") {
		t.Errorf("clusterIP %q: want an address of %s other than .1", svc.Spec.ClusterIP, DefaultServiceCIDR)
	}
	want := corev1.ServiceSpec{
		Ports:                 []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(80)}},
		Selector:              map[string]string{"app": "web"},
		ClusterIP:             svc.Spec.ClusterIP,
		ClusterIPs:            []string{svc.Spec.ClusterIP},
		Type:                  corev1.ServiceTypeClusterIP,
		SessionAffinity:       corev1.ServiceAffinityNone,
		IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
		IPFamilyPolicy:        ptrTo(corev1.IPFamilyPolicySingleStack),
		InternalTrafficPolicy: ptrTo(corev1.ServiceInternalTrafficPolicyCluster),
	}
	if diff := cmp.Diff(want, svc.Spec); diff != "" {
		t.Errorf("spec (-want,+got):\n%s", diff)
	}

	// A manifest applied again without its clusterIP keeps the allocated one.
	r = ts.do(t, "PUT", servicesPath+"/web", svcJSON("web", `{"selector":{"app":"web"},"ports":[{"port":8080}]}`))
	if r.code != 200 || decodeService(t, r.body).Spec.ClusterIP != svc.Spec.ClusterIP {
		t.Errorf("replace without clusterIP = %d %s, want the clusterIP kept", r.code, r.body)
	}

	r = ts.do(t, "POST", servicesPath, svcJSON("peers", `{"clusterIP":"None","selector":{"app":"job"}}`))
	headless := decodeService(t, r.body)
	if r.code != 201 || headless.Spec.ClusterIP != "None" || !cmp.Equal(headless.Spec.ClusterIPs, []string{"None"}) ||
		*headless.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		t.Errorf("headless create = %d %s", r.code, r.body)
	}
	// NOTE: kube-apiserver makes a headless Service without selector
	// RequireDualStack with both families, even on a single-stack cluster.
	r = ts.do(t, "POST", servicesPath, svcJSON("manual", `{"clusterIP":"None"}`))
	manual := decodeService(t, r.body)
	if r.code != 201 || *manual.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack ||
		!cmp.Equal(manual.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}) {
		t.Errorf("selectorless headless create = %d %s", r.code, r.body)
	}
}

func TestServiceClusterIPAllocation(t *testing.T) {
	ts := newTestServer(t)
	create := func(name, ip string) response {
		return ts.do(t, "POST", servicesPath, svcJSON(name, `{"clusterIP":"`+ip+`","ports":[{"port":80}]}`))
	}
	if r := create("a", "10.43.0.20"); r.code != 201 || decodeService(t, r.body).Spec.ClusterIP != "10.43.0.20" {
		t.Fatalf("create with a free clusterIP = %d %s", r.code, r.body)
	}
	tests := map[string]struct {
		ip, message string
	}{
		"taken":               {"10.43.0.20", "provided IP is already allocated"},
		"kept for kubernetes": {"10.43.0.1", "provided IP is already allocated"},
		"outside the range":   {"10.99.0.5", "the provided network does not match the current range"},
		"network address":     {"10.43.0.0", "the provided IP (10.43.0.0) is not in the valid range. The range of valid IPs is 10.43.0.0/16"},
		"broadcast address":   {"10.43.255.255", "the provided IP (10.43.255.255) is not in the valid range. The range of valid IPs is 10.43.0.0/16"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := create("b", tc.ip)
			want := `Service "b" is invalid: spec.clusterIPs: Invalid value: ["` + tc.ip + `"]: failed to allocate IP ` + tc.ip + `: ` + tc.message
			var st metav1.Status
			mustJSON(t, r.body, &st)
			if r.code != 422 || st.Message != want || st.Details.Causes[0].Field != "spec.clusterIPs" {
				t.Errorf("create = %d %s\nwant message %s", r.code, r.body, want)
			}
		})
	}
	// A dry run allocates nothing.
	if r := ts.do(t, "POST", servicesPath+"?dryRun=All", svcJSON("c", `{"clusterIP":"10.43.0.21","ports":[{"port":80}]}`)); r.code != 201 {
		t.Fatalf("dry run = %d %s", r.code, r.body)
	}
	if r := create("c", "10.43.0.21"); r.code != 201 {
		t.Errorf("create after a dry run = %d %s", r.code, r.body)
	}
	// Deleting a Service frees its address.
	if r := ts.do(t, "DELETE", servicesPath+"/a", ""); r.code != 200 {
		t.Fatalf("delete = %d %s", r.code, r.body)
	}
	if r := create("d", "10.43.0.20"); r.code != 201 {
		t.Errorf("create with a freed clusterIP = %d %s", r.code, r.body)
	}
}

func TestServiceRangeNext(t *testing.T) {
	r, err := newServiceRange(netip.MustParsePrefix("10.0.0.0/28"))
	if err != nil {
		t.Fatal(err)
	}
	used := map[netip.Addr]bool{}
	seen := map[netip.Addr]bool{}
	// A /28 has 14 usable addresses, one of them kept for "kubernetes".
	for i := 0; i < 13; i++ {
		ip, err := r.next(used, func(n uint64) uint64 { return n - 1 })
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		if ip == netip.MustParseAddr("10.0.0.1") || seen[ip] || !r.prefix.Contains(ip) || ip == netip.MustParseAddr("10.0.0.15") {
			t.Fatalf("allocation %d gave %s", i, ip)
		}
		seen[ip], used[ip] = true, true
	}
	if _, err := r.next(used, func(uint64) uint64 { return 0 }); err != errRangeFull {
		t.Errorf("full range: err %v, want %v", err, errRangeFull)
	}

	// KEP-3070: dynamic addresses come from above the static band first.
	big, err := newServiceRange(netip.MustParsePrefix("10.43.0.0/16"))
	if err != nil {
		t.Fatal(err)
	}
	ip, err := big.next(map[netip.Addr]bool{}, func(uint64) uint64 { return 0 })
	if err != nil || ip != netip.MustParseAddr("10.43.1.1") {
		t.Errorf("first dynamic address = %s, %v; want 10.43.1.1 (after the 256 static ones)", ip, err)
	}
}

func TestServiceValidation(t *testing.T) {
	tests := map[string]struct {
		spec string
		want []string // the causes, "field: message"
	}{
		"NodePort": {`{"type":"NodePort","ports":[{"port":80}]}`,
			[]string{`spec.type: Invalid value: "NodePort": skiff serves ClusterIP and headless Services only`}},
		"LoadBalancer": {`{"type":"LoadBalancer","ports":[{"port":80}]}`,
			[]string{`spec.type: Invalid value: "LoadBalancer": skiff serves ClusterIP and headless Services only`}},
		"unknown type": {`{"type":"Magic","ports":[{"port":80}]}`,
			[]string{`spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort"`}},
		"no ports": {`{"selector":{"a":"b"}}`, []string{`spec.ports: Required value`}},
		"unnamed ports": {`{"ports":[{"port":80},{"port":81}]}`,
			[]string{`spec.ports[0].name: Required value`, `spec.ports[1].name: Required value`}},
		"duplicate port": {`{"ports":[{"name":"a","port":80},{"name":"b","port":80}]}`,
			[]string{`spec.ports[1]: Duplicate value: {"Name":"","Protocol":"TCP","AppProtocol":null,"Port":80,"TargetPort":0,"NodePort":0}`}},
		"bad port": {`{"ports":[{"port":70000,"targetPort":"a_b"}]}`,
			[]string{`spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive`,
				`spec.ports[0].targetPort: Invalid value: "a_b": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`}},
		"bad protocol": {`{"ports":[{"port":80,"protocol":"ICMP"}]}`,
			[]string{`spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"`}},
		"nodePort on ClusterIP": {`{"ports":[{"port":80,"nodePort":30080}]}`,
			[]string{"spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"}},
		"bad clusterIP": {`{"clusterIP":"300.1.1.1","ports":[{"port":80}]}`,
			[]string{`spec.clusterIPs[0]: Invalid value: "300.1.1.1": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`}},
		"IPv6": {`{"ipFamilies":["IPv6"],"ports":[{"port":80}]}`,
			[]string{`spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster`}},
		"dual stack": {`{"ipFamilyPolicy":"RequireDualStack","ports":[{"port":80}]}`,
			[]string{`spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`}},
		"affinity timeout": {`{"sessionAffinity":"ClientIP","sessionAffinityConfig":{"clientIP":{"timeoutSeconds":0}},"ports":[{"port":80}]}`,
			[]string{`spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400`}},
		"external traffic policy": {`{"externalTrafficPolicy":"Local","ports":[{"port":80}]}`,
			[]string{`spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services`}},
		"bad selector": {`{"selector":{"a b":"c"},"ports":[{"port":80}]}`,
			[]string{`spec.selector: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}},
	}
	ts := newTestServer(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, "POST", servicesPath, svcJSON("s", tc.spec))
			var st metav1.Status
			mustJSON(t, r.body, &st)
			if r.code != 422 || st.Reason != metav1.StatusReasonInvalid || st.Details == nil || st.Details.Kind != "Service" {
				t.Fatalf("create = %d %s", r.code, r.body)
			}
			var got []string
			for _, c := range st.Details.Causes {
				got = append(got, c.Field+": "+c.Message)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("causes (-want,+got):\n%s", diff)
			}
		})
	}
	r := ts.do(t, "POST", servicesPath, svcJSON("Web_1", `{"ports":[{"port":80}]}`))
	if r.code != 422 || !strings.Contains(r.body, `metadata.name: Invalid value: \"Web_1\": a DNS-1035 label must consist of lower case alphanumeric characters or '-'`) {
		t.Errorf("bad name = %d %s", r.code, r.body)
	}
}

func TestServiceUpdateKeepsClusterIP(t *testing.T) {
	ts := newTestServer(t)
	if r := ts.do(t, "POST", servicesPath, svcJSON("web", `{"clusterIP":"10.43.0.9","ports":[{"port":80}]}`)); r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.body)
	}
	r := ts.do(t, "PATCH", servicesPath+"/web", `{"spec":{"clusterIP":"10.43.0.10"}}`, "Content-Type: application/merge-patch+json")
	want := `Service "web" is invalid: spec.clusterIPs[0]: Invalid value: ["10.43.0.10"]: may not change once set`
	if r.code != 422 || !strings.Contains(r.body, strings.ReplaceAll(want, `"`, `\"`)) {
		t.Errorf("changing clusterIP = %d %s\nwant %s", r.code, r.body, want)
	}
	r = ts.do(t, "PATCH", servicesPath+"/web", `{"spec":{"type":"NodePort"}}`, "Content-Type: application/strategic-merge-patch+json")
	if r.code != 422 || !strings.Contains(r.body, "skiff serves ClusterIP and headless Services only") {
		t.Errorf("to NodePort = %d %s", r.code, r.body)
	}
	r = ts.do(t, "PATCH", servicesPath+"/web", `{"spec":{"ports":[{"port":80,"targetPort":"http"}]}}`, "Content-Type: application/strategic-merge-patch+json")
	if r.code != 200 || decodeService(t, r.body).Spec.Ports[0].TargetPort != intstr.FromString("http") {
		t.Errorf("strategic patch of a port = %d %s", r.code, r.body)
	}
	// A status update never changes the spec.
	r = ts.do(t, "PUT", servicesPath+"/web/status", svcJSON("web", `{"clusterIP":"10.43.0.99","ports":[{"port":1}]}`))
	if r.code != 200 || decodeService(t, r.body).Spec.ClusterIP != "10.43.0.9" {
		t.Errorf("status update = %d %s", r.code, r.body)
	}
}

func TestServiceTable(t *testing.T) {
	ts := newTestServer(t)
	ts.do(t, "POST", servicesPath, svcJSON("web", `{"clusterIP":"10.43.0.9","selector":{"app":"web"},"ports":[{"name":"http","port":80},{"name":"dns","port":53,"protocol":"UDP"}]}`))
	ts.do(t, "POST", servicesPath, svcJSON("peers", `{"clusterIP":"None","selector":{"app":"job"}}`))
	r := ts.do(t, "GET", servicesPath, "", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	var table metav1.Table
	mustJSON(t, r.body, &table)
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"}, names); diff != "" {
		t.Errorf("columns (-want,+got):\n%s", diff)
	}
	var rows [][]any
	for _, row := range table.Rows {
		rows = append(rows, append(row.Cells[:5:5], row.Cells[6]))
	}
	want := [][]any{
		{"peers", "ClusterIP", "None", "<none>", "<none>", "app=job"},
		{"web", "ClusterIP", "10.43.0.9", "<none>", "80/TCP,53/UDP", "app=web"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows (-want,+got):\n%s", diff)
	}
}

func TestEndpointsAndSlicesServed(t *testing.T) {
	ts := newTestServer(t)
	ep := `{"metadata":{"name":"ext"},"subsets":[{"addresses":[{"ip":"192.0.2.10"},{"ip":"192.0.2.11"}],"ports":[{"port":5432}]}]}`
	r := ts.do(t, "POST", "/api/v1/namespaces/default/endpoints", ep)
	if r.code != 201 || !strings.Contains(r.header.Get("Warning"), endpointsDeprecation) {
		t.Fatalf("create endpoints = %d %s (warning %q)", r.code, r.body, r.header.Get("Warning"))
	}
	r = ts.do(t, "POST", "/api/v1/namespaces/default/endpoints", `{"metadata":{"name":"bad"},"subsets":[{"addresses":[{"ip":"127.0.0.1"}]}]}`)
	if r.code != 422 || !strings.Contains(r.body, "subsets[0].addresses[0].ip: Invalid value: \\\"127.0.0.1\\\": may not be in the loopback range") {
		t.Errorf("loopback endpoint = %d %s", r.code, r.body)
	}
	r = ts.do(t, "GET", "/api/v1/namespaces/default/endpoints", "", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	var table metav1.Table
	mustJSON(t, r.body, &table)
	if len(table.Rows) != 1 || table.Rows[0].Cells[1] != "192.0.2.10:5432,192.0.2.11:5432" {
		t.Errorf("endpoints table = %s", r.body)
	}

	slice := `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"ext-1"},"addressType":"IPv4",
		"ports":[{"port":5432}],"endpoints":[{"addresses":["192.0.2.10"]}]}`
	r = ts.do(t, "POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", slice)
	if r.code != 201 {
		t.Fatalf("create slice = %d %s", r.code, r.body)
	}
	var got struct {
		Metadata struct{ Generation int64 }
		Ports    []map[string]any
	}
	if err := json.Unmarshal([]byte(r.body), &got); err != nil || got.Metadata.Generation != 1 ||
		!cmp.Equal(got.Ports, []map[string]any{{"name": "", "port": 5432.0, "protocol": "TCP"}}) {
		t.Errorf("created slice = %s", r.body)
	}
	r = ts.do(t, "PATCH", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/ext-1", `{"addressType":"IPv6"}`,
		"Content-Type: application/merge-patch+json")
	if r.code != 422 || !strings.Contains(r.body, "addressType: Invalid value: \\\"IPv6\\\": field is immutable") {
		t.Errorf("changing addressType = %d %s", r.code, r.body)
	}
	r = ts.do(t, "GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", "", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	mustJSON(t, r.body, &table)
	if len(table.Rows) != 1 || !cmp.Equal(table.Rows[0].Cells[:4], []any{"ext-1", "IPv4", "5432", "192.0.2.10"}) {
		t.Errorf("slice table = %s", r.body)
	}
}

func TestServiceFromProtobuf(t *testing.T) {
	ts := newTestServer(t)
	raw, err := (&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "pb"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Service"}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r := ts.do(t, "POST", servicesPath, string(append([]byte("k8s\x00"), envelope...)), "Content-Type: application/vnd.kubernetes.protobuf")
	if r.code != 201 || decodeService(t, r.body).Spec.ClusterIP == "" {
		t.Errorf("protobuf create = %d %s", r.code, r.body)
	}
}
