//go:build integration

package daemon_test

import (
	"context"
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
