package api

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gorilla/mux"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/skiff-sh/skiff/db"
)

// podProxyTransport reaches pods: no proxy from the environment, and a
// pod's own certificate is not verified, as kube-apiserver's proxy does not.
var podProxyTransport = &http.Transport{
	Proxy:           nil,
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
}

// podProxy serves .../pods/{name}/proxy[/{path}], name being
// "[scheme:]pod[:port]": the request is passed on to the pod's address, on
// the port given or else the first port its containers declare, as
// kube-apiserver's pod proxy does.
func (s *server) podProxy(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	scheme, name, port, ok := proxyName(w, r, "pod")
	if !ok {
		return
	}
	obj, err := s.store.Get(db.Pods, v["namespace"], name)
	if err != nil {
		writeError(w, r, statusFor(err, podResource.groupResource(), name))
		return
	}
	pod := obj.(*corev1.Pod)
	if port == "" {
		port = firstContainerPort(pod)
	}
	if pod.Status.PodIP == "" {
		writeError(w, r, apierrors.NewServiceUnavailable(fmt.Sprintf("pod %s/%s has no address yet", pod.Namespace, pod.Name)))
		return
	}
	if scheme == "" {
		scheme = "http"
	}
	host := pod.Status.PodIP
	if port != "" {
		host = net.JoinHostPort(host, port)
	}
	target := &url.URL{Scheme: scheme, Host: host, Path: "/" + v["path"], RawQuery: r.URL.RawQuery}
	proxyTo(w, r, target, "pod "+pod.Name)
}

// firstContainerPort is the first port a container of the pod declares
// ("" if none), kube's choice of port for a proxy request that names none.
func firstContainerPort(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if len(c.Ports) > 0 {
			return strconv.Itoa(int(c.Ports[0].ContainerPort))
		}
	}
	return ""
}
