package api

import (
	"encoding/json"
	"mime"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func TestVersion(t *testing.T) {
	h := New(Config{Version: version.Info{GitVersion: "v1.34.0-skiff"}})
	for _, path := range []string{"/version", "/version/"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if code, body := rec.Code, rec.Body.String(); code != 200 || !json.Valid([]byte(body)) || !strings.Contains(body, `"gitVersion":"v1.34.0-skiff"`) {
			t.Errorf("%s = %d %s", path, code, body)
		}
	}
}

func TestDiscovery(t *testing.T) {
	ts := newTestServer(t)
	var versions metav1.APIVersions
	mustJSON(t, ts.mustDo(t, "GET", "/api", "").body, &versions)
	if diff := cmp.Diff([]string{"v1"}, versions.Versions); diff != "" {
		t.Errorf("/api (-want,+got):\n%s", diff)
	}
	var groups metav1.APIGroupList
	mustJSON(t, ts.mustDo(t, "GET", "/apis", "").body, &groups)
	var preferred []string
	for _, g := range groups.Groups {
		preferred = append(preferred, g.PreferredVersion.GroupVersion)
	}
	if diff := cmp.Diff([]string{"batch/v1", "events.k8s.io/v1", "discovery.k8s.io/v1", "rbac.authorization.k8s.io/v1",
		"authentication.k8s.io/v1", "authorization.k8s.io/v1", "coordination.k8s.io/v1", "node.k8s.io/v1", "metrics.k8s.io/v1beta1"}, preferred); diff != "" {
		t.Errorf("/apis (-want,+got):\n%s", diff)
	}
	tests := map[string]struct {
		path string
		want []metav1.APIResource
	}{
		"core": {path: "/api/v1", want: []metav1.APIResource{
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", ShortNames: []string{"po"}, Categories: []string{"all"},
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "pods/log", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get"}},
			{Name: "pods/attach", Namespaced: true, Kind: "PodAttachOptions", Verbs: metav1.Verbs{"create", "get"}},
			{Name: "pods/ephemeralcontainers", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "pods/eviction", Namespaced: true, Group: "policy", Version: "v1", Kind: "Eviction", Verbs: metav1.Verbs{"create"}},
			{Name: "pods/exec", Namespaced: true, Kind: "PodExecOptions", Verbs: metav1.Verbs{"create", "get"}},
			{Name: "pods/portforward", Namespaced: true, Kind: "PodPortForwardOptions", Verbs: metav1.Verbs{"create", "get"}},
			{Name: "pods/proxy", Namespaced: true, Kind: "PodProxyOptions", Verbs: metav1.Verbs{"create", "delete", "get", "patch", "update"}},
			{Name: "events", SingularName: "event", Namespaced: true, Kind: "Event", ShortNames: []string{"ev"},
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", ShortNames: []string{"ns"},
				Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}},
			{Name: "namespaces/status", Kind: "Namespace", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "nodes", SingularName: "node", Kind: "Node", ShortNames: []string{"no"},
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{Name: "nodes/status", Kind: "Node", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "nodes/proxy", Kind: "NodeProxyOptions", Verbs: metav1.Verbs{"create", "delete", "get", "patch", "update"}},
			{Name: "services", SingularName: "service", Namespaced: true, Kind: "Service", ShortNames: []string{"svc"}, Categories: []string{"all"},
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{Name: "services/status", Namespaced: true, Kind: "Service", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "endpoints", SingularName: "endpoints", Namespaced: true, Kind: "Endpoints", ShortNames: []string{"ep"},
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", ShortNames: []string{"cm"},
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret",
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{Name: "serviceaccounts", SingularName: "serviceaccount", Namespaced: true, Kind: "ServiceAccount", ShortNames: []string{"sa"},
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{Name: "serviceaccounts/token", Namespaced: true, Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest",
				Verbs: metav1.Verbs{"create"}},
			{Name: "podtemplates", SingularName: "podtemplate", Namespaced: true, Kind: "PodTemplate",
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
		}},
		"discovery": {path: "/apis/discovery.k8s.io/v1", want: []metav1.APIResource{
			{Name: "endpointslices", SingularName: "endpointslice", Namespaced: true, Kind: "EndpointSlice",
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
		}},
		"batch": {path: "/apis/batch/v1", want: []metav1.APIResource{
			{Name: "cronjobs", SingularName: "cronjob", Namespaced: true, Kind: "CronJob", ShortNames: []string{"cj"}, Categories: []string{"all"},
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{Name: "cronjobs/status", Namespaced: true, Kind: "CronJob", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "jobs", SingularName: "job", Namespaced: true, Kind: "Job", Categories: []string{"all"},
				Verbs: metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}},
			{Name: "jobs/status", Namespaced: true, Kind: "Job", Verbs: metav1.Verbs{"get", "patch", "update"}},
		}},
		"metrics": {path: "/apis/metrics.k8s.io/v1beta1", want: []metav1.APIResource{
			{Name: "nodes", Kind: "NodeMetrics", Verbs: metav1.Verbs{"get", "list"}},
			{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: metav1.Verbs{"get", "list"}},
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.mustDo(t, "GET", tc.path, "", "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var list metav1.APIResourceList
			mustJSON(t, r.body, &list)
			if diff := cmp.Diff(tc.want, list.APIResources); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func mustJSON(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("decoding %q: %v", body, err)
	}
}

// gvkOf reads an x-kubernetes-group-version-kind extension.
func gvkOf(t *testing.T, ext spec.Extensions) []map[string]string {
	t.Helper()
	var list []map[string]string
	if err := ext.GetObject("x-kubernetes-group-version-kind", &list); err == nil {
		return list
	}
	var one map[string]string
	if err := ext.GetObject("x-kubernetes-group-version-kind", &one); err != nil {
		return nil
	}
	return []map[string]string{one}
}

func TestOpenAPIV3(t *testing.T) {
	ts := newTestServer(t)
	var disc struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	mustJSON(t, ts.mustDo(t, "GET", "/openapi/v3", "").body, &disc)
	var keys []string
	for k := range disc.Paths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if diff := cmp.Diff([]string{"api/v1", "apis/authentication.k8s.io/v1", "apis/authorization.k8s.io/v1", "apis/batch/v1",
		"apis/coordination.k8s.io/v1", "apis/discovery.k8s.io/v1", "apis/events.k8s.io/v1", "apis/node.k8s.io/v1", "apis/rbac.authorization.k8s.io/v1"}, keys); diff != "" {
		t.Fatalf("paths (-want,+got):\n%s", diff)
	}
	tests := map[string]struct {
		key, kind, group, patchPath, schema string
		patches                             int // the object, status, ephemeralcontainers
	}{
		"cronjobs": {key: "apis/batch/v1", kind: "CronJob", group: "batch", patchPath: "/apis/batch/v1/namespaces/{namespace}/cronjobs/{name}", schema: "io.k8s.api.batch.v1.CronJob", patches: 2},
		"jobs":     {key: "apis/batch/v1", kind: "Job", group: "batch", patchPath: "/apis/batch/v1/namespaces/{namespace}/jobs/{name}", schema: "io.k8s.api.batch.v1.Job", patches: 2},
		"pods":     {key: "api/v1", kind: "Pod", group: "", patchPath: "/api/v1/namespaces/{namespace}/pods/{name}", schema: "io.k8s.api.core.v1.Pod", patches: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var doc spec3.OpenAPI
			mustJSON(t, ts.mustDo(t, "GET", disc.Paths[tc.key].ServerRelativeURL, "").body, &doc)
			want := []map[string]string{{"group": tc.group, "version": "v1", "kind": tc.kind}}
			// What kubectl checks to use server-side field validation: every
			// PATCH operation of the kind lists fieldValidation.
			patches := 0
			for path, item := range doc.Paths.Paths {
				op := item.Patch
				if op == nil || !strings.HasPrefix(path, strings.TrimSuffix(tc.patchPath, "/{name}")) {
					continue // another kind of the group version
				}
				patches++
				if diff := cmp.Diff(want, gvkOf(t, op.Extensions)); diff != "" {
					t.Errorf("%s PATCH gvk (-want,+got):\n%s", path, diff)
				}
				found := false
				for _, p := range op.Parameters {
					found = found || p.Name == "fieldValidation"
				}
				if !found {
					t.Errorf("%s PATCH has no fieldValidation parameter", path)
				}
			}
			if patches != tc.patches || doc.Paths.Paths[tc.patchPath] == nil {
				t.Errorf("PATCH operations = %d, path %s present %v", patches, tc.patchPath, doc.Paths.Paths[tc.patchPath] != nil)
			}
			s := doc.Components.Schemas[tc.schema]
			if s == nil {
				t.Fatalf("no schema %s", tc.schema)
			}
			if diff := cmp.Diff(want, gvkOf(t, s.Extensions)); diff != "" {
				t.Errorf("schema gvk (-want,+got):\n%s", diff)
			}
			spec := s.Properties["spec"]
			if len(spec.AllOf) != 1 || spec.AllOf[0].Ref.String() == "" || spec.Description == "" {
				t.Errorf("spec property is not a described allOf reference: %+v", spec)
			}
			if tm := doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]; tm == nil || tm.Format != "date-time" {
				t.Errorf("metav1.Time schema: %+v", tm)
			}
			c := doc.Components.Schemas["io.k8s.api.core.v1.Container"]
			if c == nil || !cmp.Equal([]string{"name"}, c.Required) {
				t.Errorf("Container required: %+v", c)
			}
			if got := c.Properties["env"].Extensions; got["x-kubernetes-patch-merge-key"] != "name" || got["x-kubernetes-patch-strategy"] != "merge" {
				t.Errorf("Container.env patch extensions: %v", got)
			}
		})
	}
}

func TestOpenAPIV3IntOrString(t *testing.T) {
	var doc spec3.OpenAPI
	data, err := json.Marshal(buildOpenAPIV3(version.Info{}, coreV1))
	if err != nil {
		t.Fatal(err)
	}
	mustJSON(t, string(data), &doc)
	s := doc.Components.Schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
	if s == nil || len(s.OneOf) != 2 || s.Format != "int-or-string" {
		t.Errorf("IntOrString: %+v", s)
	}
	q := doc.Components.Schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]
	if q == nil || len(q.OneOf) != 2 {
		t.Errorf("Quantity: %+v", q)
	}
}

func TestOpenAPIV2(t *testing.T) {
	ts := newTestServer(t)
	var doc spec.Swagger
	mustJSON(t, ts.mustDo(t, "GET", "/openapi/v2", "").body, &doc)
	for _, name := range []string{"io.k8s.api.batch.v1.Job", "io.k8s.api.core.v1.Pod", "io.k8s.api.batch.v1.JobList", "io.k8s.api.batch.v1.CronJob", "io.k8s.api.batch.v1.CronJobList"} {
		if _, ok := doc.Definitions[name]; !ok {
			t.Errorf("no definition %s", name)
		}
	}
	r := ts.mustDo(t, "GET", "/openapi/v2", "", "Accept: "+mediaOpenAPIV2ProtoOld)
	if _, _, err := mime.ParseMediaType(r.header.Get("Content-Type")); err != nil {
		t.Errorf("Content-Type %q: %v", r.header.Get("Content-Type"), err)
	}
	var pb openapiv2.Document
	if err := proto.Unmarshal([]byte(r.body), &pb); err != nil {
		t.Fatalf("protobuf: %v", err)
	}
	if pb.Swagger != "2.0" || len(pb.Definitions.GetAdditionalProperties()) != len(doc.Definitions) {
		t.Errorf("protobuf document: swagger %q, %d definitions", pb.Swagger, len(pb.Definitions.GetAdditionalProperties()))
	}
}

func TestAggregatedDiscovery(t *testing.T) {
	ts := newTestServer(t)
	accept := "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
	tests := map[string]struct {
		path, accept string
		wantGroups   []string // "" for the core group
	}{
		"core":             {path: "/api", accept: accept, wantGroups: []string{""}},
		"named groups":     {path: "/apis", accept: accept, wantGroups: []string{"batch"}},
		"plain JSON first": {path: "/api", accept: "Accept: application/json, " + mediaAggregatedDiscovery},
		"only v2beta1":     {path: "/apis", accept: "Accept: application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"},
		"anything":         {path: "/apis", accept: "Accept: */*"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.mustDo(t, "GET", tc.path, "", tc.accept)
			if tc.wantGroups == nil {
				if ct := r.header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q, want legacy discovery", ct)
				}
				return
			}
			if ct := r.header.Get("Content-Type"); ct != mediaAggregatedDiscovery {
				t.Errorf("Content-Type %q", ct)
			}
			var list apidiscoveryv2.APIGroupDiscoveryList
			mustJSON(t, r.body, &list)
			var groups []string
			for _, g := range list.Items {
				groups = append(groups, g.Name)
			}
			if list.Kind != "APIGroupDiscoveryList" || list.APIVersion != "apidiscovery.k8s.io/v2" {
				t.Errorf("TypeMeta %+v", list.TypeMeta)
			}
			if !cmp.Equal(groups[:len(tc.wantGroups)], tc.wantGroups) {
				t.Errorf("groups %v, want %v first", groups, tc.wantGroups)
			}
		})
	}
	// The batch group's jobs, as kubectl reads them.
	var list apidiscoveryv2.APIGroupDiscoveryList
	mustJSON(t, ts.mustDo(t, "GET", "/apis", "", accept).body, &list)
	var jobs *apidiscoveryv2.APIResourceDiscovery
	for _, g := range list.Items {
		for _, v := range g.Versions {
			for i, res := range v.Resources {
				if g.Name == "batch" && v.Version == "v1" && res.Resource == "jobs" {
					jobs = &v.Resources[i]
				}
			}
		}
	}
	want := &apidiscoveryv2.APIResourceDiscovery{
		Resource: "jobs", SingularResource: "job", Scope: apidiscoveryv2.ScopeNamespace, Categories: []string{"all"},
		ResponseKind: &metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
		Verbs:        []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"},
		Subresources: []apidiscoveryv2.APISubresourceDiscovery{{Subresource: "status",
			ResponseKind: &metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, Verbs: []string{"get", "patch", "update"}}},
	}
	if diff := cmp.Diff(want, jobs); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
}
