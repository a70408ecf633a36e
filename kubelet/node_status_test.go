package kubelet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

func testNodeFacts() (Node, NodeFacts) {
	n := Node{Name: "edge-1", HostIP: "10.0.0.5", CPU: resource.MustParse("4"), Memory: resource.MustParse("8Gi")}
	f := NodeFacts{hostname: "edge-1", containerdVersion: "1.6.20", Storage: resource.MustParse("100Gi"),
		reserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		info:     corev1.NodeSystemInfo{KubeletVersion: "v1.34.0-skiff", ContainerRuntimeVersion: "containerd://1.6.20"}}
	return n, f
}

func TestNodeObject(t *testing.T) {
	n, f := testNodeFacts()
	now := metav1.NewTime(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	got := nodeObject(n, f, now)
	quantities := func(l corev1.ResourceList) map[string]string {
		out := map[string]string{}
		for k, v := range l {
			out[string(k)] = v.String()
		}
		return out
	}
	if diff := cmp.Diff(map[string]string{"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "pods": "110",
		"hugepages-1Gi": "0", "hugepages-2Mi": "0"}, quantities(got.Status.Capacity)); diff != "" {
		t.Errorf("capacity (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"cpu": "3500m", "memory": "7Gi", "ephemeral-storage": "100Gi", "pods": "110",
		"hugepages-1Gi": "0", "hugepages-2Mi": "0"}, quantities(got.Status.Allocatable)); diff != "" {
		t.Errorf("allocatable (-want,+got):\n%s", diff)
	}
	var conds []string
	for _, c := range got.Status.Conditions {
		conds = append(conds, string(c.Type)+" "+string(c.Status)+" "+c.Reason+" "+c.Message)
	}
	want := []string{
		"MemoryPressure False KubeletHasSufficientMemory kubelet has sufficient memory available",
		"DiskPressure False KubeletHasNoDiskPressure kubelet has no disk pressure",
		"PIDPressure False KubeletHasSufficientPID kubelet has sufficient PID available",
		"Ready True KubeletReady kubelet is posting ready status",
	}
	if diff := cmp.Diff(want, conds); diff != "" {
		t.Errorf("conditions (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.NodeAddress{{Type: "InternalIP", Address: "10.0.0.5"}, {Type: "Hostname", Address: "edge-1"}},
		got.Status.Addresses); diff != "" {
		t.Errorf("addresses (-want,+got):\n%s", diff)
	}
	if got.Labels[corev1.LabelHostname] != "edge-1" || got.Labels[corev1.LabelOSStable] != "linux" {
		t.Errorf("labels: %v", got.Labels)
	}
}

func TestRegisterNodeKeepsWhatClientsChanged(t *testing.T) {
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	n, f := testNodeFacts()
	first := metav1.NewTime(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	if err := registerNode(store, nodeObject(n, f, first)); err != nil {
		t.Fatal(err)
	}
	// kubectl cordon and kubectl label.
	_, err = store.Modify(db.Nodes, "", "edge-1", func(obj db.Object) error {
		node := obj.(*corev1.Node)
		node.Spec.Unschedulable = true
		node.Labels["site"] = "north"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	later := metav1.NewTime(first.Add(5 * time.Minute))
	if err := registerNode(store, nodeObject(n, f, later)); err != nil {
		t.Fatal(err)
	}
	obj, err := store.Get(db.Nodes, "", "edge-1")
	if err != nil {
		t.Fatal(err)
	}
	node := obj.(*corev1.Node)
	if !node.Spec.Unschedulable || node.Labels["site"] != "north" {
		t.Errorf("client changes lost: unschedulable %v, labels %v", node.Spec.Unschedulable, node.Labels)
	}
	ready := node.Status.Conditions[3]
	if !ready.LastHeartbeatTime.Equal(&later) || !ready.LastTransitionTime.Equal(&first) {
		t.Errorf("Ready heartbeat %v transition %v", ready.LastHeartbeatTime, ready.LastTransitionTime)
	}
}

func TestOSImage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "os-release")
	if err := os.WriteFile(path, []byte("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("Debian GNU/Linux 12 (bookworm)", osImage(path)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}
