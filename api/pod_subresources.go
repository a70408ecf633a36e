package api

import (
	"net/http"

	"github.com/gorilla/mux"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podSubresourceRoutes registers the Pod subresources of the kubelet's
// streaming side and of debugging: exec, attach, portforward, proxy and
// ephemeralcontainers.
func (s *server) podSubresourceRoutes(r *mux.Router) {
	object := podResource.gv.prefix() + "/namespaces/{namespace}/" + podResource.plural + "/{name}"
	r.HandleFunc(object+"/exec", s.methods(podResource, "exec", map[string]http.HandlerFunc{
		http.MethodGet:  s.podExec,
		http.MethodPost: s.podExec,
	}))
	r.HandleFunc(object+"/attach", s.methods(podResource, "attach", map[string]http.HandlerFunc{
		http.MethodGet:  s.podAttach,
		http.MethodPost: s.podAttach,
	}))
	r.HandleFunc(object+"/portforward", s.methods(podResource, "portforward", map[string]http.HandlerFunc{
		http.MethodGet:  s.podPortForward,
		http.MethodPost: s.podPortForward,
	}))
	proxy := map[string]http.HandlerFunc{}
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		proxy[m] = s.podProxy
	}
	r.HandleFunc(object+"/proxy", s.methods(podResource, "proxy", proxy))
	r.HandleFunc(object+"/proxy/{path:.*}", s.methods(podResource, "proxy", proxy))
	r.HandleFunc(object+"/ephemeralcontainers", s.methods(podResource, "ephemeralcontainers", map[string]http.HandlerFunc{
		http.MethodGet:   s.get(podResource),
		http.MethodPut:   s.putEphemeralContainers,
		http.MethodPatch: s.patchEphemeralContainers,
	}))
}

// podSubresources are those subresources in discovery, as kube-apiserver
// lists them.
func podSubresources() []metav1.APIResource {
	return []metav1.APIResource{
		{Name: "pods/attach", Namespaced: true, Kind: "PodAttachOptions", Verbs: metav1.Verbs{"create", "get"}},
		{Name: "pods/ephemeralcontainers", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "patch", "update"}},
		{Name: "pods/exec", Namespaced: true, Kind: "PodExecOptions", Verbs: metav1.Verbs{"create", "get"}},
		{Name: "pods/portforward", Namespaced: true, Kind: "PodPortForwardOptions", Verbs: metav1.Verbs{"create", "get"}},
		{Name: "pods/proxy", Namespaced: true, Kind: "PodProxyOptions", Verbs: metav1.Verbs{"create", "delete", "get", "patch", "update"}},
	}
}
