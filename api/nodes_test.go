package api

import (
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
	tests := map[string]struct{ method, path string }{
		"create": {"POST", "/api/v1/nodes"},
		"delete": {"DELETE", "/api/v1/nodes/node-a"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, tc.method, tc.path, `{"metadata":{"name":"node-b"}}`)
			st := statusOf(t, r.body)
			if diff := cmp.Diff([]any{405, metav1.StatusReasonMethodNotAllowed}, []any{r.code, st.Reason}); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
