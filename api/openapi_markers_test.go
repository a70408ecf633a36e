package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func TestOpenAPIPodSubresourcePaths(t *testing.T) {
	const pod = "/api/v1/namespaces/{namespace}/pods/{name}"
	v2 := buildOpenAPIV2(version.Info{}).Paths.Paths
	v3 := buildOpenAPIV3(version.Info{}, groupVersion{version: "v1"}).Paths.Paths
	tests := []struct {
		path, method, id, kind string
	}{
		{path: pod + "/exec", method: "get", id: "connectCoreV1GetNamespacedPodExec", kind: "PodExecOptions"},
		{path: pod + "/exec", method: "post", id: "connectCoreV1PostNamespacedPodExec", kind: "PodExecOptions"},
		{path: pod + "/attach", method: "post", id: "connectCoreV1PostNamespacedPodAttach", kind: "PodAttachOptions"},
		{path: pod + "/eviction", method: "post", id: "createCoreV1NamespacedPodEviction", kind: "Eviction"},
		{path: pod + "/ephemeralcontainers", method: "patch", id: "patchCoreV1NamespacedPodEphemeralcontainers", kind: "Pod"},
		{path: pod + "/log", method: "get", id: "readCoreV1NamespacedPodLog", kind: "Pod"},
		{path: "/api/v1/nodes/{name}", method: "get", id: "readCoreV1Node", kind: "Node"},
		{path: "/api/v1/namespaces/{name}", method: "get", id: "readCoreV1Namespace", kind: "Namespace"},
		{path: "/api/v1/namespaces/{namespace}/events", method: "get", id: "listCoreV1NamespacedEvent", kind: "Event"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			item2, item3 := v2[tt.path], v3[tt.path]
			if item3 == nil {
				t.Fatalf("v3 has no %s", tt.path)
			}
			ops3 := map[string]*spec3.Operation{"get": item3.Get, "post": item3.Post, "patch": item3.Patch}
			if o := ops3[tt.method]; o == nil || o.OperationId != tt.id {
				t.Errorf("v3 %s operation: %+v", tt.method, o)
			}
			op := map[string]*spec.Operation{"get": item2.Get, "post": item2.Post, "patch": item2.Patch}[tt.method]
			if op == nil {
				t.Fatalf("v2 has no %s %s", tt.method, tt.path)
			}
			gvk, _ := op.Extensions["x-kubernetes-group-version-kind"].(map[string]string)
			if diff := cmp.Diff([]string{tt.id, tt.kind}, []string{op.ID, gvk["kind"]}); diff != "" {
				t.Errorf("v2 operation id and kind (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAPIMarkers(t *testing.T) {
	defs := buildOpenAPIV2(version.Info{}).Definitions
	tests := []struct {
		def, field string
		want       map[string]any
	}{
		{def: "io.k8s.api.core.v1.Container", field: "ports",
			want: map[string]any{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"containerPort", "protocol"}}},
		{def: "io.k8s.api.core.v1.PodSpec", field: "nodeSelector", want: map[string]any{"x-kubernetes-map-type": "atomic"}},
		{def: "io.k8s.api.core.v1.PodSpec", field: "tolerations", want: map[string]any{"x-kubernetes-list-type": "atomic"}},
		{def: "io.k8s.api.batch.v1.JobStatus", field: "conditions", want: map[string]any{"x-kubernetes-list-type": "atomic"}},
		{def: "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", field: "finalizers", want: map[string]any{"x-kubernetes-list-type": "set"}},
		{def: "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector", want: map[string]any{"x-kubernetes-map-type": "atomic"}},
	}
	for _, tt := range tests {
		t.Run(tt.def+"."+tt.field, func(t *testing.T) {
			s := defs[tt.def]
			if tt.field != "" {
				s = s.Properties[tt.field]
			}
			got := map[string]any{}
			for k, v := range s.Extensions {
				if k != "x-kubernetes-patch-strategy" && k != "x-kubernetes-patch-merge-key" {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("extensions (-want +got):\n%s", diff)
			}
		})
	}
	if got := defs["io.k8s.api.core.v1.ContainerPort"].Properties["protocol"].Default; got != "TCP" {
		t.Errorf("ContainerPort.protocol default %v, want TCP", got)
	}
}
