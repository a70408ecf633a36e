package kubelet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/skiff-sh/skiff/daemon/events"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/internal/buildinfo"
	"github.com/skiff-sh/skiff/kube"
)

// NodeStatusInterval is how often the node's status is written again
// when nothing changed (the kubelet's nodeStatusReportFrequency).
const NodeStatusInterval = 5 * time.Minute

// NodeFacts is what the Node object says of this machine beyond Node.
type NodeFacts struct {
	hostname          string
	containerdVersion string
	reserved          corev1.ResourceList // --system-reserved
	Storage           resource.Quantity   // the data dir's filesystem size
	info              corev1.NodeSystemInfo
}

// GatherNodeFacts reads the machine's identity and the data dir's size.
// Unreadable files leave their fields empty, as the kubelet does.
func GatherNodeFacts(dataDir, containerdVersion string, reserved corev1.ResourceList) NodeFacts {
	host, _ := os.Hostname()
	f := NodeFacts{
		hostname: strings.ToLower(host),
		// NOTE: Debian's containerd calls itself "1.6.20~ds1"; the kubelet
		// shows the upstream version it packages.
		containerdVersion: strings.SplitN(containerdVersion, "~", 2)[0],
		reserved:          reserved,
		info: corev1.NodeSystemInfo{
			MachineID:       readTrimmed("/etc/machine-id"),
			SystemUUID:      readTrimmed("/sys/class/dmi/id/product_uuid"),
			BootID:          readTrimmed("/proc/sys/kernel/random/boot_id"),
			KernelVersion:   readTrimmed("/proc/sys/kernel/osrelease"),
			OSImage:         osImage("/etc/os-release"),
			OperatingSystem: goruntime.GOOS,
			Architecture:    goruntime.GOARCH,
			KubeletVersion:  buildinfo.Info().GitVersion,
		},
	}
	f.info.ContainerRuntimeVersion = "containerd://" + f.containerdVersion
	var st syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &st); err == nil {
		f.Storage = *resource.NewQuantity(int64(st.Blocks)*int64(st.Bsize), resource.BinarySI)
	}
	return f
}

func readTrimmed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// osImage is PRETTY_NAME of os-release, as the kubelet reports it.
func osImage(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// nodeObject is this machine as the kubelet registers it: labels,
// capacity and allocatable, the four conditions of a healthy node, its
// addresses and system info.
func nodeObject(n Node, f NodeFacts, now metav1.Time) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              n.CPU,
		corev1.ResourceMemory:           n.Memory,
		corev1.ResourceEphemeralStorage: f.Storage,
		corev1.ResourcePods:             *resource.NewQuantity(kube.DefaultMaxPods, resource.DecimalSI),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
	}
	condition := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: message,
			LastHeartbeatTime: now, LastTransitionTime: now}
	}
	addresses := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.HostIP}}
	if f.hostname != "" {
		addresses = append(addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: f.hostname})
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name,
			Labels: map[string]string{
				"beta.kubernetes.io/arch": goruntime.GOARCH,
				"beta.kubernetes.io/os":   goruntime.GOOS,
				corev1.LabelArchStable:    goruntime.GOARCH,
				corev1.LabelHostname:      n.Name,
				corev1.LabelOSStable:      goruntime.GOOS,
			},
		},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: kube.Allocatable(capacity, f.reserved),
			Conditions: []corev1.NodeCondition{
				condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				condition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				condition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				condition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
			},
			Addresses: addresses,
			NodeInfo:  f.info,
		},
	}
}

// registerNode writes the Node: created the first time; afterwards its
// status is replaced (a condition keeps its lastTransitionTime while its
// status stays) and its labels are set again, while what clients changed
// (other labels, taints, unschedulable) is kept.
func registerNode(store *db.Store, want *corev1.Node) error {
	return store.Write(func(tx *db.Tx) error {
		obj, err := tx.Get(db.Nodes, "", want.Name)
		if errors.Is(err, db.ErrNotFound) {
			return tx.Create(db.Nodes, want.DeepCopy())
		}
		if err != nil {
			return err
		}
		node := obj.(*corev1.Node)
		status := *want.Status.DeepCopy()
		for i, c := range status.Conditions {
			for _, old := range node.Status.Conditions {
				if old.Type == c.Type && old.Status == c.Status {
					status.Conditions[i].LastTransitionTime = old.LastTransitionTime
				}
			}
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		for k, v := range want.Labels {
			node.Labels[k] = v
		}
		node.Status = status
		return tx.Update(db.Nodes, node)
	})
}

// RunNodeStatus writes the node's status again every interval (its
// heartbeat) until ctx ends.
func RunNodeStatus(ctx context.Context, store *db.Store, n Node, f NodeFacts, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := registerNode(store, nodeObject(n, f, metav1.Now())); err != nil {
				if errors.Is(err, db.ErrClosed) {
					return fmt.Errorf("updating node status: %w", err)
				}
				logrus.WithError(err).Error("updating node status")
			}
		}
	}
}

// StartNode registers the node and records what the kubelet and the node
// controller report when a node starts: "Starting kubelet." every time,
// and when the node is new its conditions and its registration.
func StartNode(store *db.Store, n Node, f NodeFacts, b *events.Broadcaster) error {
	created, err := register(store, n, f)
	if err != nil {
		return err
	}
	b.NewRecorder(corev1.EventSource{Component: "kubelet", Host: n.Name}).
		Event(nodeRef(n.Name), corev1.EventTypeNormal, "Starting", "Starting kubelet.")
	if created {
		return recordRegistration(store, n, b)
	}
	return nil
}

// nodeRef is the kubelet's reference to its node in events.
// NOTE: the kubelet refers to its node with the node's name as uid.
func nodeRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

// register writes the node (registerNode) and reports whether it created
// it.
func register(store *db.Store, n Node, f NodeFacts) (created bool, err error) {
	_, err = store.Get(db.Nodes, "", n.Name)
	created = errors.Is(err, db.ErrNotFound)
	return created, registerNode(store, nodeObject(n, f, metav1.Now()))
}

// recordRegistration records a new node's conditions and its registration
// as the kubelet and the node controller report them.
func recordRegistration(store *db.Store, n Node, b *events.Broadcaster) error {
	ref := nodeRef(n.Name)
	kubelet := b.NewRecorder(corev1.EventSource{Component: "kubelet", Host: n.Name})
	for _, reason := range []string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"} {
		kubelet.Event(ref, corev1.EventTypeNormal, reason, "Node %s status is now: %s", n.Name, reason)
	}
	kubelet.Event(ref, corev1.EventTypeNormal, "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
	kubelet.Event(ref, corev1.EventTypeNormal, "NodeReady", "Node %s status is now: NodeReady", n.Name)
	obj, err := store.Get(db.Nodes, "", n.Name)
	if err != nil {
		return err
	}
	b.NewRecorder(corev1.EventSource{Component: "node-controller"}).
		Event(obj, corev1.EventTypeNormal, "RegisteredNode", "Node %s event: Registered Node %s in Controller", n.Name, n.Name)
	return nil
}
