//go:build integration

package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodProxy: a running skiffd passes pods/proxy requests on to the pod's
// address — on the port named, or the first port its containers declare —
// with the path and query, for any method, as kube-apiserver does (the
// [sig-node] PreStop conformance spec reads its server pod that way).
func TestPodProxy(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	pods := s.client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "httpd", Image: "busybox:1.35",
			Command: []string{"sh", "-c", "mkdir -p /www/cgi-bin && echo hello from the pod > /www/hello.txt && " +
				`printf '#!/bin/sh\necho Content-Type: text/plain\necho\necho "$REQUEST_METHOD $QUERY_STRING"\n' > /www/cgi-bin/echo && ` +
				"chmod +x /www/cgi-bin/echo && exec httpd -f -p 8080 -h /www"},
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodRunning(t, s, "web")
	var got []byte
	waitFor(t, time.Minute, "the pod's server answering through the proxy", func() (bool, error) {
		var err error
		got, err = pods.ProxyGet("http", "web", "8080", "hello.txt", nil).DoRaw(ctx)
		return err == nil, nil
	})
	if string(got) != "hello from the pod\n" {
		t.Errorf("GET pods/http:web:8080/proxy/hello.txt = %q", got)
	}
	// No port: the container's first one. A query and another method.
	b, err := s.client.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("web").
		SubResource("proxy").Suffix("cgi-bin/echo").Param("a", "b").DoRaw(ctx)
	if err != nil || strings.TrimSpace(string(b)) != "POST a=b" {
		t.Errorf("POST pods/web/proxy/cgi-bin/echo?a=b = %q %v", b, err)
	}
	// A pod that is not there.
	if _, err := pods.ProxyGet("", "nobody", "", "", nil).DoRaw(ctx); !apierrors.IsNotFound(err) {
		t.Errorf("proxy to a missing pod: %v, want 404", err)
	}
}

// TestNodeProxy: nodes/proxy reaches the node's kubelet (no port, or the
// kubelet's 10250): its /healthz, and /pods, the pods bound to the node (the
// [sig-node] "Delete Grace Period" spec reads it so); other kubelet paths
// are its 404. Another port is passed on to the node's address, without the
// client's credentials.
func TestNodeProxy(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	if _, err := s.client.CoreV1().Pods("default").Create(ctx, shPod("bound", corev1.RestartPolicyNever, "sleep 600"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodRunning(t, s, "bound")
	nodes, err := s.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %v, %v", nodes, err)
	}
	node := nodes.Items[0].Name
	nodeProxy := func(name, path string) ([]byte, error) {
		return s.client.CoreV1().RESTClient().Get().Resource("nodes").Name(name).SubResource("proxy").Suffix(path).DoRaw(ctx)
	}

	for _, name := range []string{node, node + ":10250"} {
		b, err := nodeProxy(name, "pods")
		var list corev1.PodList
		if err == nil {
			err = json.Unmarshal(b, &list)
		}
		if err != nil || list.Kind != "PodList" || len(list.Items) != 1 || list.Items[0].Name != "bound" || list.Items[0].Status.Phase != corev1.PodRunning {
			t.Errorf("nodes/%s/proxy/pods: %v, %.300s; want a PodList of the running pod", name, err, b)
		}
	}
	if b, err := nodeProxy(node, "healthz"); err != nil || string(b) != "ok" {
		t.Errorf("nodes/%s/proxy/healthz = %q, %v", node, b, err)
	}
	if _, err := nodeProxy(node, "stats/nope"); !apierrors.IsNotFound(err) {
		t.Errorf("an endpoint the kubelet lacks: %v, want 404", err)
	}
	for path, want := range map[string]struct {
		code    int
		message string
	}{
		"/api/v1/nodes/nobody/proxy/pods":  {http.StatusNotFound, `nodes \"nobody\" not found`},
		"/api/v1/nodes/a:b:c:d/proxy/pods": {http.StatusBadRequest, `invalid node request \"a:b:c:d\"`},
	} {
		resp, err := s.get(path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want.code || !strings.Contains(string(body), `"message":"`+want.message+`"`) {
			t.Errorf("GET %s: %d %s, want %d with %s", path, resp.StatusCode, body, want.code, want.message)
		}
	}

	// Another port: a server on the node's address.
	ip := nodeIP(t, s)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s auth=%q", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	b, err := s.client.CoreV1().RESTClient().Get().Resource("nodes").Name(node+":"+port).SubResource("proxy").
		Suffix("metrics").Param("a", "b").DoRaw(ctx)
	if want := `GET /metrics?a=b auth=""`; err != nil || string(b) != want {
		t.Errorf("nodes/%s:%s/proxy/metrics = %q, %v; want %q", node, port, b, err, want)
	}
}
