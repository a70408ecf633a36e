package api

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// nodeResource is core/v1 nodes: this machine, registered by the daemon
// as the kubelet registers its node, and the Nodes clients create (with
// the status they give, as kube's registry keeps it). Pods run only on
// this machine's node; daemon/nodelifecycle says what becomes of the
// others.
var nodeResource = &resource{
	gv:                   coreV1,
	kind:                 "Node",
	plural:               "nodes",
	singular:             "node",
	shortNames:           []string{"no"},
	store:                db.Nodes,
	goType:               reflect.TypeOf(corev1.Node{}),
	listType:             reflect.TypeOf(corev1.NodeList{}),
	newList:              newNodeList,
	fields:               nodeFields,
	columns:              nodeColumns,
	cells:                func(obj db.Object, now time.Time) []any { return nodeCells(obj.(*corev1.Node), now) },
	prepareCreate:        func(_ *server, obj db.Object) { kube.PrepareNodeForCreate(obj.(*corev1.Node)) },
	validateCreate:       validateAs(kube.ValidateNode),
	prepareUpdate:        prepareUpdateAs(kube.PrepareNodeForUpdate, kube.PrepareNodeForStatusUpdate),
	validateUpdate:       validateUpdateAs(kube.ValidateNodeUpdate),
	validateStatusUpdate: validateUpdateAs(kube.ValidateNodeUpdate),
	spec:                 func(obj db.Object) any { return obj.(*corev1.Node).Spec },
	defaultPropagation:   metav1.DeletePropagationBackground,
	deleteGrace:          func(db.Object, *int64) int64 { return 0 },
}

func newNodeList(items []db.Object, meta metav1.ListMeta) runtime.Object {
	return &corev1.NodeList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NodeList"}, ListMeta: meta,
		Items: listItems[corev1.Node](items)}
}

// nodeFields are the node fields usable in field selectors.
func nodeFields(obj db.Object) fields.Set {
	return fields.Set{"metadata.name": obj.GetName(),
		"spec.unschedulable": strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)}
}

var nodeColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Status", Type: "string", Description: "The status of the node"},
	{Name: "Roles", Type: "string", Description: "The roles of the node"},
	ageColumn,
	{Name: "Version", Type: "string", Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]},
	{Name: "Internal-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
	{Name: "External-IP", Type: "string", Priority: 1, Description: corev1.NodeStatus{}.SwaggerDoc()["addresses"]},
	{Name: "OS-Image", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]},
	{Name: "Kernel-Version", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]},
	{Name: "Container-Runtime", Type: "string", Priority: 1, Description: corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]},
}

// nodeCells is one node's row, as kube's printer makes it.
func nodeCells(node *corev1.Node, now time.Time) []any {
	info := node.Status.NodeInfo
	return []any{node.Name, nodeStatus(node), noneIfEmpty(strings.Join(nodeRoles(node), ",")),
		age(node.CreationTimestamp, now), info.KubeletVersion,
		nodeAddress(node, corev1.NodeInternalIP), nodeAddress(node, corev1.NodeExternalIP),
		unknownIfEmpty(info.OSImage), unknownIfEmpty(info.KernelVersion), unknownIfEmpty(info.ContainerRuntimeVersion)}
}

// nodeStatus is "Ready" or "NotReady" ("Unknown" without the condition),
// with ",SchedulingDisabled" for a cordoned node.
func nodeStatus(node *corev1.Node) string {
	status := "Unknown"
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeReady {
			continue
		}
		status = "Not" + string(c.Type)
		if c.Status == corev1.ConditionTrue {
			status = string(c.Type)
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

// nodeRoles are the roles named by node-role.kubernetes.io/<role> and
// kubernetes.io/role labels, sorted.
func nodeRoles(node *corev1.Node) []string {
	var roles []string
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if role := strings.TrimPrefix(k, "node-role.kubernetes.io/"); role != "" {
				roles = append(roles, role)
			}
		case k == "kubernetes.io/role" && v != "":
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

// nodeAddress is the node's first address of type t, "<none>" if none.
func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func unknownIfEmpty(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}
