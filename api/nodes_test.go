package api

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

func testNode() *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{"kubernetes.io/hostname": "node-a"}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"},
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}, {Type: corev1.NodeHostName, Address: "node-a"}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.34.0-skiff", OSImage: "Debian GNU/Linux 12 (bookworm)",
				KernelVersion: "6.1.0", ContainerRuntimeVersion: "containerd://1.6.20"},
		},
	}
}

func TestNodeCells(t *testing.T) {
	tests := map[string]struct {
		mutate func(n *corev1.Node)
		want   []any
	}{
		"ready": {
			want: []any{"node-a", "Ready", "<none>", "v1.34.0-skiff", "10.0.0.5", "<none>",
				"Debian GNU/Linux 12 (bookworm)", "6.1.0", "containerd://1.6.20"},
		},
		"cordoned control plane": {
			mutate: func(n *corev1.Node) {
				n.Spec.Unschedulable = true
				n.Labels["node-role.kubernetes.io/control-plane"] = ""
				n.Labels["kubernetes.io/role"] = "edge"
			},
			want: []any{"node-a", "Ready,SchedulingDisabled", "control-plane,edge", "v1.34.0-skiff", "10.0.0.5", "<none>",
				"Debian GNU/Linux 12 (bookworm)", "6.1.0", "containerd://1.6.20"},
		},
		"not ready, nothing known": {
			mutate: func(n *corev1.Node) {
				n.Status = corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}}
			},
			want: []any{"node-a", "NotReady", "<none>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := testNode()
			if tc.mutate != nil {
				tc.mutate(n)
			}
			cells := nodeCells(n, n.CreationTimestamp.Time)
			got := append(cells[:3:3], cells[4:]...) // without AGE
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNodeEndpoints(t *testing.T) {
	ts := newTestServer(t)
	if err := ts.store.Create(db.Nodes, testNode()); err != nil {
		t.Fatal(err)
	}
	var node corev1.Node
	mustJSON(t, ts.mustDo(t, "GET", "/api/v1/nodes/node-a", "").body, &node)
	if node.Kind != "Node" || node.Status.NodeInfo.KubeletVersion != "v1.34.0-skiff" {
		t.Errorf("GET node: %+v", node)
	}
	var list corev1.NodeList
	mustJSON(t, ts.mustDo(t, "GET", "/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse", "").body, &list)
	if len(list.Items) != 1 || list.Kind != "NodeList" {
		t.Errorf("list: %+v", list)
	}
	// kubectl cordon: a patch of the spec; the status stays.
	mustJSON(t, ts.mustDo(t, "PATCH", "/api/v1/nodes/node-a", `{"spec":{"unschedulable":true},"status":{"conditions":[]}}`,
		"Content-Type: application/strategic-merge-patch+json").body, &node)
	if !node.Spec.Unschedulable || len(node.Status.Conditions) != 2 {
		t.Errorf("after cordon: unschedulable %v, %d conditions", node.Spec.Unschedulable, len(node.Status.Conditions))
	}
	// A client's Node: created with its status, then deleted.
	r := ts.do(t, "POST", "/api/v1/nodes", `{"metadata":{"name":"node-b"},"spec":{"unschedulable":true},`+
		`"status":{"conditions":[{"type":"Ready","status":"True","reason":"E2E"}]}}`)
	var created corev1.Node
	mustJSON(t, r.body, &created)
	if r.code != 201 || created.Generation != 0 || len(created.Status.Conditions) != 1 || !created.Spec.Unschedulable {
		t.Errorf("POST node: %d %s", r.code, r.body)
	}
	if r := ts.do(t, "DELETE", "/api/v1/nodes/node-b", ""); r.code != 200 {
		t.Errorf("DELETE node: %d %s", r.code, r.body)
	}
	if r := ts.do(t, "GET", "/api/v1/nodes/node-b", ""); r.code != 404 {
		t.Errorf("GET deleted node: %d %s", r.code, r.body)
	}
	invalid := map[string]struct{ body, want string }{
		"taint without effect": {`{"metadata":{"name":"n1"},"spec":{"taints":[{"key":"k"}]}}`,
			`Node "n1" is invalid: metadata.taints[0].effect: Required value`},
		"taint effect": {`{"metadata":{"name":"n1"},"spec":{"taints":[{"key":"k","effect":"Never"}]}}`,
			`Node "n1" is invalid: metadata.taints[0].effect: Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`},
		"duplicate taint": {`{"metadata":{"name":"n1"},"spec":{"taints":[{"key":"k","effect":"NoExecute"},{"key":"k","value":"v","effect":"NoExecute"}]}}`,
			`taints must be unique by key and effect pair`},
		"name": {`{"metadata":{"name":"N_1"}}`, `Node "N_1" is invalid: metadata.name: Invalid value: "N_1"`},
		"pod CIDRs": {`{"metadata":{"name":"n1"},"spec":{"podCIDRs":["10.0.0.0/24","10.1.0.0/24"]}}`,
			`spec.podCIDRs: Invalid value: ["10.0.0.0/24","10.1.0.0/24"]: may specify no more than one CIDR for each IP family`},
	}
	for name, tc := range invalid {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, "POST", "/api/v1/nodes", tc.body)
			st := statusOf(t, r.body)
			if r.code != 422 || st.Reason != metav1.StatusReasonInvalid || !strings.Contains(st.Message, tc.want) {
				t.Errorf("got %d %s %q, want 422 Invalid with %q", r.code, st.Reason, st.Message, tc.want)
			}
		})
	}
	// A taint added by a patch is validated too.
	r = ts.do(t, "PATCH", "/api/v1/nodes/node-a", `{"spec":{"taints":[{"key":"k","effect":"Bad"}]}}`,
		"Content-Type: application/merge-patch+json")
	if st := statusOf(t, r.body); r.code != 422 || !strings.Contains(st.Message, "metadata.taints[0].effect: Unsupported value") {
		t.Errorf("invalid taint patched: %d %s", r.code, r.body)
	}
}
