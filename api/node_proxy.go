package api

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/skiff-sh/skiff/db"
)

// kubeletPort is the port that names a node's kubelet in a node proxy
// request ("node:10250"), the kubelet's default --port.
//
// NOTE: skiff's kubelet has no server of its own: skiffd answers its read
// endpoints here, and the node reports no daemonEndpoints, since nothing
// listens on that port.
const kubeletPort = "10250"

// nodeProxyRoutes registers nodes/{name}/proxy[/{path}].
func (s *server) nodeProxyRoutes(r *mux.Router) {
	object := nodeResource.gv.prefix() + "/" + nodeResource.plural + "/{name}"
	proxy := map[string]http.HandlerFunc{}
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		proxy[m] = s.nodeProxy
	}
	r.HandleFunc(object+"/proxy", s.methods(nodeResource, "proxy", proxy))
	r.HandleFunc(object+"/proxy/{path:.*}", s.methods(nodeResource, "proxy", proxy))
}

// nodeProxySubresource is nodes/proxy in discovery, as kube-apiserver lists it.
func nodeProxySubresource() metav1.APIResource {
	return metav1.APIResource{Name: "nodes/proxy", Kind: "NodeProxyOptions", Verbs: metav1.Verbs{"create", "delete", "get", "patch", "update"}}
}

// nodeProxy serves nodes/{name}/proxy/{path}, name being
// "[scheme:]node[:port]", as kube-apiserver's node proxy: without a port,
// or with the kubelet's, the request is the kubelet's; with another port it
// is passed on to that port of the node's address.
func (s *server) nodeProxy(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	scheme, name, port, ok := proxyName(w, r, "node")
	if !ok {
		return
	}
	obj, err := s.store.Get(db.Nodes, "", name)
	if err != nil {
		writeError(w, r, statusFor(err, nodeResource.groupResource(), name))
		return
	}
	node := obj.(*corev1.Node)
	if port == "" || port == kubeletPort {
		s.kubeletRead(w, r, node, "/"+v["path"])
		return
	}
	host := nodeAddress(node, corev1.NodeInternalIP)
	if host == "" {
		writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("node %s has no internal address", node.Name)))
		return
	}
	if scheme == "" {
		scheme = "http"
	}
	target := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, port), Path: "/" + v["path"], RawQuery: r.URL.RawQuery}
	proxyTo(w, r, target, "node "+node.Name)
}

// kubeletRead answers the kubelet's read endpoints: /healthz, and /pods,
// the pods bound to the node as the kubelet holds them. Others are the
// kubelet's plain 404: the rest of its server (stats, cAdvisor's metrics,
// the debugging handlers) skiff does not have.
func (s *server) kubeletRead(w http.ResponseWriter, r *http.Request, node *corev1.Node, path string) {
	switch {
	case path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		fmt.Fprint(w, "ok")
	case path == "/pods" && r.Method == http.MethodGet:
		objs, _, err := s.store.List(db.Pods, "", nil)
		if err != nil {
			writeError(w, r, statusFor(err, podResource.groupResource(), ""))
			return
		}
		objs = slices.DeleteFunc(objs, func(o db.Object) bool { return o.(*corev1.Pod).Spec.NodeName != node.Name })
		list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: listItems[corev1.Pod](objs)}
		writeJSON(w, r, http.StatusOK, list)
	default:
		http.NotFound(w, r)
	}
}

// proxyName splits the {name} of a proxy request, "[scheme:]name[:port]";
// a bad one is answered with kube-apiserver's 400 (ok false).
func proxyName(w http.ResponseWriter, r *http.Request, kind string) (scheme, name, port string, ok bool) {
	v := mux.Vars(r)["name"]
	scheme, name, port, ok = utilnet.SplitSchemeNamePort(v)
	if !ok || name == "" {
		writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid %s request %q", kind, v)))
		return "", "", "", false
	}
	return scheme, name, port, true
}

// proxyTo passes the request on to target (what, for errors: "pod x"),
// without the API client's credentials, as kube-apiserver's proxy does.
func proxyTo(w http.ResponseWriter, r *http.Request, target *url.URL, what string) {
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = ""
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Cookie")
		},
		Transport: podProxyTransport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			logrus.WithField("target", what).WithError(err).Debug("proxying")
			writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach %s: %v", what, err)))
		},
	}
	proxy.ServeHTTP(w, r)
}
