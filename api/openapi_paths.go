package api

import (
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The REST operations of the served resources, described once and rendered
// into both the OpenAPI v2 and v3 documents.

// param is a parameter of an operation.
type param struct {
	name, in, typ, desc string
	required            bool
}

// op is one operation on a path.
type op struct {
	method   string // get, put, post, patch, delete
	id       string // kube's operationId, e.g. readBatchV1NamespacedJob
	action   string // x-kubernetes-action
	params   []param
	body     reflect.Type // nil: no body
	resp     reflect.Type // nil: text (logs)
	codes    []int
	consumes []string
	gvk      map[string]string // x-kubernetes-group-version-kind; nil: the resource's kind
}

// pathItem is one path with its common parameters and operations.
type pathItem struct {
	path   string
	params []param
	ops    []op
	rs     *resource
}

var (
	pNamespace = param{name: "namespace", in: "path", typ: "string", required: true, desc: "object name and auth scope, such as for teams and projects"}
	pPretty    = param{name: "pretty", in: "query", typ: "string", desc: "If 'true', then the output is pretty printed."}
	pDryRun    = param{name: "dryRun", in: "query", typ: "string", desc: "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed"}
	pManager   = param{name: "fieldManager", in: "query", typ: "string", desc: "fieldManager is a name associated with the actor or entity that is making these changes."}
	// NOTE: kubectl ≥1.26 looks for fieldValidation among the parameters of
	// the PATCH operation of a kind in /openapi/v3 to decide that the server
	// validates fields (and skips its client-side validation).
	pValidation = param{name: "fieldValidation", in: "query", typ: "string", desc: "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict"}
	pForce      = param{name: "force", in: "query", typ: "boolean", desc: "Force is going to \"force\" Apply requests. It must be unset for non-apply patch requests."}
	listParams  = []param{
		{name: "allowWatchBookmarks", in: "query", typ: "boolean", desc: "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."},
		{name: "continue", in: "query", typ: "string", desc: "The continue option should be set when retrieving more results from the server."},
		{name: "fieldSelector", in: "query", typ: "string", desc: "A selector to restrict the list of returned objects by their fields. Defaults to everything."},
		{name: "labelSelector", in: "query", typ: "string", desc: "A selector to restrict the list of returned objects by their labels. Defaults to everything."},
		{name: "limit", in: "query", typ: "integer", desc: "limit is a maximum number of responses to return for a list call."},
		{name: "resourceVersion", in: "query", typ: "string", desc: "resourceVersion sets a constraint on what resource versions a request may be served from."},
		{name: "timeoutSeconds", in: "query", typ: "integer", desc: "Timeout for the list/watch call."},
		{name: "watch", in: "query", typ: "boolean", desc: "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."},
	}
	deleteParams = []param{
		pDryRun,
		{name: "gracePeriodSeconds", in: "query", typ: "integer", desc: "The duration in seconds before the object should be deleted."},
		{name: "orphanDependents", in: "query", typ: "boolean", desc: "Deprecated: please use the PropagationPolicy."},
		{name: "propagationPolicy", in: "query", typ: "string", desc: "Whether and how garbage collection will be performed: 'Orphan', 'Background' or 'Foreground'."},
	}
	logParams = []param{
		{name: "container", in: "query", typ: "string", desc: "The container for which to stream logs. Defaults to only container if there is one container in the pod."},
		{name: "follow", in: "query", typ: "boolean", desc: "Follow the log stream of the pod. Defaults to false."},
		{name: "limitBytes", in: "query", typ: "integer", desc: "If set, the number of bytes to read from the server before terminating the log output."},
		{name: "previous", in: "query", typ: "boolean", desc: "Return previous terminated container logs. Defaults to false."},
		{name: "sinceSeconds", in: "query", typ: "integer", desc: "A relative time in seconds before the current time from which to show logs."},
		{name: "sinceTime", in: "query", typ: "string", desc: "An RFC3339 timestamp from which to show logs."},
		{name: "tailLines", in: "query", typ: "integer", desc: "If set, the number of lines from the end of the logs to show."},
		{name: "timestamps", in: "query", typ: "boolean", desc: "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log output."},
	}
	patchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json", "application/apply-patch+yaml"}

	statusType        = reflect.TypeOf(metav1.Status{})
	deleteOptionsType = reflect.TypeOf(metav1.DeleteOptions{})
	patchType         = reflect.TypeOf(metav1.Patch{})
)

// opName is kube's operation id infix: "BatchV1", "CoreV1", "EventsV1"
// (the first label of a dotted group name).
func (gv groupVersion) opName() string {
	g, _, _ := strings.Cut(gv.group, ".")
	if g == "" {
		g = "core"
	}
	return strings.ToUpper(g[:1]) + g[1:] + strings.ToUpper(gv.version[:1]) + gv.version[1:]
}

// resourcePaths are the paths of one resource: those of the verbs it
// serves, namespaced or cluster-scoped.
func resourcePaths(rs *resource) []pathItem {
	gvn, kind := rs.gv.opName(), rs.kind
	collection, scope := rs.gv.prefix()+"/"+rs.plural, ""
	collectionParams := []param{pPretty}
	if rs.namespaced() {
		collection, scope = rs.gv.prefix()+"/namespaces/{namespace}/"+rs.plural, "Namespaced"
		collectionParams = []param{pNamespace, pPretty}
	}
	objectParams := append([]param{{name: "name", in: "path", typ: "string", required: true, desc: "name of the " + kind}}, collectionParams...)
	write := []param{pDryRun, pManager, pValidation}
	var items []pathItem
	if rs.namespaced() && rs.serves("list") {
		items = append(items, pathItem{path: rs.gv.prefix() + "/" + rs.plural, params: []param{pPretty}, ops: []op{
			{method: "get", id: "list" + gvn + kind + "ForAllNamespaces", action: "list", params: listParams, resp: rs.listType, codes: []int{200}},
		}})
	}
	items = append(items,
		pathItem{path: collection, params: collectionParams, ops: servedOps(rs, []op{
			{method: "get", id: "list" + gvn + scope + kind, action: "list", params: listParams, resp: rs.listType, codes: []int{200}},
			{method: "post", id: "create" + gvn + scope + kind, action: "post", params: write, body: rs.goType, resp: rs.goType, codes: []int{200, 201, 202}},
		})},
		pathItem{path: collection + "/{name}", params: objectParams, ops: servedOps(rs, []op{
			{method: "get", id: "read" + gvn + scope + kind, action: "get", resp: rs.goType, codes: []int{200}},
			{method: "put", id: "replace" + gvn + scope + kind, action: "put", params: write, body: rs.goType, resp: rs.goType, codes: []int{200, 201}},
			{method: "patch", id: "patch" + gvn + scope + kind, action: "patch", params: append(write, pForce), body: patchType, resp: rs.goType, codes: []int{200, 201}, consumes: patchTypes},
			{method: "delete", id: "delete" + gvn + scope + kind, action: "delete", params: deleteParams, body: deleteOptionsType, resp: statusType, codes: []int{200, 202}},
		})},
	)
	if !rs.noStatus {
		items = append(items, pathItem{path: collection + "/{name}/status", params: objectParams, ops: []op{
			{method: "get", id: "read" + gvn + scope + kind + "Status", action: "get", resp: rs.goType, codes: []int{200}},
			{method: "put", id: "replace" + gvn + scope + kind + "Status", action: "put", params: write, body: rs.goType, resp: rs.goType, codes: []int{200, 201}},
			{method: "patch", id: "patch" + gvn + scope + kind + "Status", action: "patch", params: append(write, pForce), body: patchType, resp: rs.goType, codes: []int{200, 201}, consumes: patchTypes},
		}})
	}
	if rs.hasLog {
		items = append(items, pathItem{path: collection + "/{name}/log", params: objectParams, ops: []op{
			{method: "get", id: "read" + gvn + scope + kind + "Log", action: "get", params: logParams, codes: []int{200}},
		}})
	}
	if isPods(rs) {
		items = append(items, podSubresourcePaths(rs, collection, objectParams)...)
	}
	for i := range items {
		items[i].rs = rs
	}
	return items
}

// opVerbs are the verbs of the operations by their x-kubernetes-action.
var opVerbs = map[string]string{"list": "list", "post": "create", "get": "get", "put": "update", "patch": "patch", "delete": "delete"}

// servedOps keeps the operations of the verbs rs serves.
func servedOps(rs *resource, ops []op) []op {
	var out []op
	for _, o := range ops {
		if rs.serves(opVerbs[o.action]) {
			out = append(out, o)
		}
	}
	return out
}
