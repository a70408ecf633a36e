package api

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// The pod subresources served besides log and status, described for the
// OpenAPI documents as kube-apiserver describes them, so that kubectl's
// explain and field validation know them.

var (
	podType      = reflect.TypeOf(corev1.Pod{})
	evictionType = reflect.TypeOf(policyv1.Eviction{})

	// NOTE: the operations of a subresource whose body or options are
	// another kind name that kind (kube: PodExecOptions, PodAttachOptions,
	// policy/v1 Eviction).
	gvkPodExecOptions   = map[string]string{"group": "", "version": "v1", "kind": "PodExecOptions"}
	gvkPodAttachOptions = map[string]string{"group": "", "version": "v1", "kind": "PodAttachOptions"}
	gvkPodPortForward   = map[string]string{"group": "", "version": "v1", "kind": "PodPortForwardOptions"}
	gvkEviction         = map[string]string{"group": "policy", "version": "v1", "kind": "Eviction"}

	streamParams = []param{
		{name: "container", in: "query", typ: "string", desc: "The container in which to execute the command. Defaults to only container if there is only one container in the pod."},
		{name: "stderr", in: "query", typ: "boolean", desc: "Redirect the standard error stream of the pod for this call."},
		{name: "stdin", in: "query", typ: "boolean", desc: "Redirect the standard input stream of the pod for this call. Defaults to false."},
		{name: "stdout", in: "query", typ: "boolean", desc: "Redirect the standard output stream of the pod for this call."},
		{name: "tty", in: "query", typ: "boolean", desc: "TTY if true indicates that a tty will be allocated for the exec call. Defaults to false."},
	}
	execParams        = append([]param{{name: "command", in: "query", typ: "string", desc: "Command is the remote command to execute. argv array. Not executed within a shell."}}, streamParams...)
	portForwardParams = []param{{name: "ports", in: "query", typ: "integer", desc: "List of ports to forward Required when using WebSockets"}}
)

// podSubresourcePaths are the paths of pods/exec, pods/attach,
// pods/portforward, pods/eviction and pods/ephemeralcontainers under collection.
func podSubresourcePaths(rs *resource, collection string, objectParams []param) []pathItem {
	gvn := rs.gv.opName()
	write := []param{pDryRun, pManager, pValidation}
	connect := func(method, sub string, params []param, gvk map[string]string) op {
		return op{method: method, id: "connect" + gvn + upperFirst(method) + "NamespacedPod" + sub, action: "connect",
			params: params, codes: []int{200}, gvk: gvk}
	}
	return []pathItem{
		{path: collection + "/{name}/exec", params: objectParams[:2], ops: []op{
			connect("get", "Exec", execParams, gvkPodExecOptions),
			connect("post", "Exec", execParams, gvkPodExecOptions),
		}},
		{path: collection + "/{name}/attach", params: objectParams[:2], ops: []op{
			connect("get", "Attach", streamParams, gvkPodAttachOptions),
			connect("post", "Attach", streamParams, gvkPodAttachOptions),
		}},
		{path: collection + "/{name}/portforward", params: objectParams[:2], ops: []op{
			connect("get", "Portforward", portForwardParams, gvkPodPortForward),
			connect("post", "Portforward", portForwardParams, gvkPodPortForward),
		}},
		{path: collection + "/{name}/eviction", params: objectParams, ops: []op{
			{method: "post", id: "create" + gvn + "NamespacedPodEviction", action: "post", params: write,
				body: evictionType, resp: evictionType, codes: []int{200, 201, 202}, gvk: gvkEviction},
		}},
		{path: collection + "/{name}/ephemeralcontainers", params: objectParams, ops: []op{
			{method: "get", id: "read" + gvn + "NamespacedPodEphemeralcontainers", action: "get", resp: podType, codes: []int{200}},
			{method: "put", id: "replace" + gvn + "NamespacedPodEphemeralcontainers", action: "put", params: write, body: podType, resp: podType, codes: []int{200, 201}},
			{method: "patch", id: "patch" + gvn + "NamespacedPodEphemeralcontainers", action: "patch", params: append(write, pForce), body: patchType, resp: podType, codes: []int{200, 201}, consumes: patchTypes},
		}},
	}
}

// isPods reports whether rs is core/v1 pods.
func isPods(rs *resource) bool { return rs.gvk() == corev1.SchemeGroupVersion.WithKind("Pod") }

// upperFirst is s with its first letter in upper case ("get" → "Get").
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
