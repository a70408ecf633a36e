//go:build integration

package daemon_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// TestNodeLease: the kubelet role holds kube-node-lease/<node> (held by the
// node, the configured duration, owned by the Node) and renews it every
// quarter of its duration; kubectl describe node shows it; a client's
// deletion of the Node is followed by its registration again, and the
// lease follows the new Node.
func TestNodeLease(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--node-lease-duration", "2s")
	s.start()
	ctx := context.Background()
	nodes, err := s.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	node := nodes.Items[0]
	leases := s.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	// NOTE: as a kubelet's, the lease is written beside the start, not
	// before skiffd is ready (on a loaded CI machine it came later).
	var lease *coordinationv1.Lease
	waitFor(t, 30*time.Second, "the node's lease", func() (bool, error) {
		got, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		lease = got
		return err == nil, err
	})
	if h := lease.Spec.HolderIdentity; h == nil || *h != node.Name || lease.Spec.LeaseDurationSeconds == nil ||
		*lease.Spec.LeaseDurationSeconds != 2 || lease.Spec.RenewTime == nil {
		t.Errorf("lease spec: %+v", lease.Spec)
	}
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
	if diff := cmp.Diff(want, lease.OwnerReferences); diff != "" {
		t.Errorf("lease owner (-want,+got):\n%s", diff)
	}
	first := lease.Spec.RenewTime.Time
	waitFor(t, 10*time.Second, "the lease renewed", func() (bool, error) {
		lease, err = leases.Get(ctx, node.Name, metav1.GetOptions{})
		return err == nil && lease.Spec.RenewTime.After(first), err
	})

	k := newKubectl(t, s)
	out := k.run("describe", "node", node.Name)
	if m := missing(out, "Lease:", "HolderIdentity:  "+node.Name, "RenewTime:"); m != "" || strings.Contains(out, "Failed to get lease") {
		t.Errorf("describe node lacks %q:\n%s", m, out)
	}

	// Deleted by a client, the node is registered again, and owns its lease.
	if err := s.client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var again *corev1.Node
	waitFor(t, 10*time.Second, "the node registered again", func() (bool, error) {
		again, err = s.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && again.UID != node.UID, err
	})
	if c := readyCondition(again); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "KubeletReady" {
		t.Errorf("node registered again: Ready %+v", c)
	}
	waitFor(t, 10*time.Second, "the lease owned by the new node", func() (bool, error) {
		lease, err = leases.Get(ctx, node.Name, metav1.GetOptions{})
		return err == nil && len(lease.OwnerReferences) == 1 && lease.OwnerReferences[0].UID == again.UID, err
	})
}

// TestNodeCreatedByClient: a Node a client creates is served as
// kube-apiserver serves it (created with its status, patched, listed by
// label, updated, deleted), and pods are still placed on skiffd's node
// only; with no kubelet behind it, the node lifecycle controller marks it
// Unknown and taints it unreachable once its heartbeat is older than
// --node-monitor-grace-period, and a pod bound to it that does not
// tolerate that is evicted; deleted, the node's pods are collected.
func TestNodeCreatedByClient(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t, "--node-monitor-grace-period", "2s")
	s.start()
	ctx := context.Background()
	nodes := s.client.CoreV1().Nodes()
	fake, err := nodes.Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "fake-node"},
		Spec:       corev1.NodeSpec{Unschedulable: true},
		Status: corev1.NodeStatus{Phase: corev1.NodeRunning, Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "E2E", Message: "Set from a test"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := readyCondition(fake); c == nil || c.Reason != "E2E" || fake.Status.Phase != corev1.NodeRunning {
		t.Errorf("created node's status: %+v", fake.Status)
	}
	fake, err = nodes.Patch(ctx, "fake-node", types.StrategicMergePatchType, []byte(`{"metadata":{"labels":{"fake":"patched"}}}`), metav1.PatchOptions{})
	if err != nil || fake.Labels["fake"] != "patched" {
		t.Fatalf("patch: %v %v", fake, err)
	}
	list, err := nodes.List(ctx, metav1.ListOptions{LabelSelector: "fake=patched"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "fake-node" {
		t.Fatalf("list by label: %v %v", list, err)
	}

	// A pod without a node still lands on skiffd's own node.
	pod, err := s.client.CoreV1().Pods("default").Create(ctx, sleepPod("placed"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName == "fake-node" || pod.Spec.NodeName == "" {
		t.Errorf("pod placed on %q", pod.Spec.NodeName)
	}
	// kube-apiserver's DefaultTolerationSeconds admission.
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(t corev1.Toleration) bool {
			return t.Key == key && t.Operator == corev1.TolerationOpExists && t.Effect == corev1.TaintEffectNoExecute &&
				t.TolerationSeconds != nil && *t.TolerationSeconds == 300
		}) {
			t.Errorf("pod lacks the default toleration of %s: %+v", key, pod.Spec.Tolerations)
		}
	}

	// A pod bound to the fake node never runs; once the node is unreachable
	// it is evicted.
	bound := sleepPod("bound")
	bound.Spec.NodeName = "fake-node"
	// Its own toleration of the unreachable taint, instead of the 300s
	// kube's admission gives a pod without one.
	bound.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(1))}}
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the fake node unreachable", func() (bool, error) {
		fake, err = nodes.Get(ctx, "fake-node", metav1.GetOptions{})
		c := readyCondition(fake)
		return err == nil && c != nil && c.Status == corev1.ConditionUnknown && hasTaint(fake, corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute) &&
			hasTaint(fake, corev1.TaintNodeUnreachable, corev1.TaintEffectNoSchedule), err
	})
	if c := readyCondition(fake); c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status." {
		t.Errorf("fake node's Ready: %+v", c)
	}
	// No kubelet finishes its deletion: it stays Terminating, as on a
	// cluster whose node went away.
	waitPod(t, s.client, "bound", 30*time.Second, "the bound pod evicted", func(p *corev1.Pod) bool {
		return p.DeletionTimestamp != nil && disruptedBy(p) == "DeletionByTaintManager"
	})
	if own, err := nodes.Get(ctx, pod.Spec.NodeName, metav1.GetOptions{}); err != nil || len(own.Spec.Taints) != 0 {
		t.Errorf("skiffd's own node tainted: %v %v", own.Spec.Taints, err)
	}

	fake.Labels["fake"] = "updated"
	if fake, err = nodes.Update(ctx, fake, metav1.UpdateOptions{}); err != nil || fake.Labels["fake"] != "updated" {
		t.Fatalf("update: %v %v", fake, err)
	}
	if err := nodes.Delete(ctx, "fake-node", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Get(ctx, "fake-node", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("deleted node: %v", err)
	}

	// The node gone for the pod GC's quarantine (40s), its pod is marked
	// Failed (DeletionByPodGC) and deleted at once.
	pw, err := s.client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=bound"})
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Stop()
	deadline := time.After(90 * time.Second)
	var last *corev1.Pod
	for gone := false; !gone; {
		select {
		case ev := <-pw.ResultChan():
			if p, ok := ev.Object.(*corev1.Pod); ok {
				last, gone = p, ev.Type == watch.Deleted
			}
		case <-deadline:
			t.Fatalf("the pod of the deleted node is still there: %+v", last)
		}
	}
	if last.Status.Phase != corev1.PodFailed || disruptedBy(last) != "DeletionByPodGC" {
		t.Errorf("the pod of the deleted node went as %s, %+v", last.Status.Phase, last.Status.Conditions)
	}
}

func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	if node == nil {
		return nil
	}
	for i, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

func hasTaint(node *corev1.Node, key string, effect corev1.TaintEffect) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// disruptedBy is the reason of the pod's DisruptionTarget condition, "" if
// it has none.
func disruptedBy(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}

// TestTaintEviction: a NoExecute taint on skiffd's node evicts at once the
// pod that does not tolerate it (DisruptionTarget DeletionByTaintManager,
// the taint-eviction-controller's "Marking for deletion" event), after its
// tolerationSeconds the pod that tolerates it for a while, never the pod
// that tolerates it for good; removing the taint cancels a pending
// eviction ("Cancelling deletion"); a pending eviction outlives a kill -9
// of skiffd.
func TestTaintEviction(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")
	const key = "example.com/evict"
	tolerating := func(name string, seconds *int64) *corev1.Pod {
		p := sleepPod(name)
		p.Spec.Tolerations = []corev1.Toleration{{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}}
		return p
	}
	plain := sleepPod("plain")
	plain.Finalizers = []string{"example.com/hold"} // to see it marked before it goes
	for _, p := range []*corev1.Pod{plain, tolerating("forever", nil), tolerating("short", ptr(int64(3))), tolerating("long", ptr(int64(600)))} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"plain", "forever", "short", "long"} {
		waitPod(t, s.client, name, time.Minute, name+" running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	}
	nodeList, err := s.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node := nodeList.Items[0].Name
	taint := func(on bool) time.Time {
		t.Helper()
		patch := `{"spec":{"taints":null}}`
		if on {
			patch = `{"spec":{"taints":[{"key":"` + key + `","value":"v","effect":"NoExecute"}]}}`
		}
		if _, err := s.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}
	tainted := taint(true)

	evicted := waitPod(t, s.client, "plain", 30*time.Second, "the intolerant pod evicted", func(p *corev1.Pod) bool {
		return p.DeletionTimestamp != nil
	})
	if r := disruptedBy(evicted); r != "DeletionByTaintManager" {
		t.Errorf("evicted pod's DisruptionTarget reason %q: %+v", r, evicted.Status.Conditions)
	}
	if _, err := pods.Patch(ctx, "plain", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the short-tolerating pod evicted", func() (bool, error) {
		p, err := pods.Get(ctx, "short", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil, nil
	})
	if waited := time.Since(tainted); waited < 2*time.Second {
		t.Errorf("the pod tolerating for 3s was evicted after %v", waited)
	}
	events := func(name string) []corev1.Event {
		list, err := s.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	waitFor(t, 30*time.Second, "the eviction events", func() (bool, error) {
		for _, name := range []string{"plain", "short"} {
			if !hasEvent(events(name), "TaintManagerEviction", "Marking for deletion Pod default/"+name) {
				return false, nil
			}
		}
		return true, nil
	})
	for _, e := range events("plain") {
		if e.Reason == "TaintManagerEviction" && e.Source.Component != "taint-eviction-controller" {
			t.Errorf("event source %+v", e.Source)
		}
	}

	// The taint removed: the long eviction is cancelled, the others stay.
	taint(false)
	waitFor(t, 30*time.Second, "the long eviction cancelled", func() (bool, error) {
		return hasEvent(events("long"), "TaintManagerEviction", "Cancelling deletion of Pod default/long"), nil
	})

	// A pending eviction survives a kill -9: tainted again, killed, started.
	if _, err := pods.Create(ctx, tolerating("restart", ptr(int64(2))), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, s.client, "restart", time.Minute, "restart running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	taint(true)
	s.kill()
	s.start()
	waitFor(t, 30*time.Second, "the pod evicted after the restart", func() (bool, error) {
		p, err := pods.Get(ctx, "restart", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil, nil
	})
	taint(false)
	for _, name := range []string{"forever", "long"} {
		if p, err := pods.Get(ctx, name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
			t.Errorf("%s evicted: %v", name, err)
		}
		if hasEvent(events(name), "TaintManagerEviction", "Marking for deletion Pod default/"+name) {
			t.Errorf("%s marked for deletion", name)
		}
	}
}

func hasEvent(events []corev1.Event, reason, message string) bool {
	for _, e := range events {
		if e.Reason == reason && e.Message == message {
			return true
		}
	}
	return false
}
