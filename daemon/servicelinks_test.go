//go:build integration

package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestServiceLinks: a container gets the variables of every Service with a
// cluster IP in its namespace (not headless ones, not another namespace's)
// unless enableServiceLinks is false, and those of the API's Service
// always; its own env wins over them and may refer to them.
func TestServiceLinks(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	ctx := context.Background()
	svcs := []struct {
		ns  string
		svc *corev1.Service
	}{
		{"default", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "fooservice"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"name": "none"}, Ports: []corev1.ServicePort{{Port: 8765}}}}},
		{"default", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "peers"}, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"name": "none"}, Ports: []corev1.ServicePort{{Port: 80}}}}},
		{"elsewhere", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "othersvc"}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"name": "none"}, Ports: []corev1.ServicePort{{Port: 80}}}}},
	}
	createNamespace(t, s.client, "elsewhere")
	var fooIP string
	for _, x := range svcs {
		got, err := s.client.CoreV1().Services(x.ns).Create(ctx, x.svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Name == "fooservice" {
			fooIP = got.Spec.ClusterIP
		}
	}
	api, err := s.client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	links := shPod("links", corev1.RestartPolicyNever, "env")
	links.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "FOOSERVICE_SERVICE_PORT", Value: "mine"},
		{Name: "FOO_ADDR", Value: "$(FOOSERVICE_SERVICE_HOST)"}}
	nolinks := shPod("nolinks", corev1.RestartPolicyNever, "env")
	nolinks.Spec.EnableServiceLinks = ptr(false)
	env := map[string]map[string]string{}
	for _, p := range []*corev1.Pod{links, nolinks} {
		if _, err := s.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitPod(t, s.client, p.Name, time.Minute, "finished", isFinished)
		if got.Status.Phase != corev1.PodSucceeded {
			t.Fatalf("pod %s: %s", p.Name, got.Status.Phase)
		}
		out, err := s.client.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		env[p.Name] = map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				env[p.Name][k] = v
			}
		}
	}
	want := map[string]string{
		"FOOSERVICE_SERVICE_HOST":        fooIP,
		"FOOSERVICE_SERVICE_PORT":        "mine",
		"FOOSERVICE_PORT":                "tcp://" + fooIP + ":8765",
		"FOOSERVICE_PORT_8765_TCP":       "tcp://" + fooIP + ":8765",
		"FOOSERVICE_PORT_8765_TCP_PROTO": "tcp",
		"FOOSERVICE_PORT_8765_TCP_PORT":  "8765",
		"FOOSERVICE_PORT_8765_TCP_ADDR":  fooIP,
		"FOO_ADDR":                       fooIP,
		"KUBERNETES_SERVICE_HOST":        api.Spec.ClusterIP,
	}
	for k, v := range want {
		if got, ok := env["links"][k]; !ok || got != v {
			t.Errorf("links: %s=%q (set %v), want %q", k, got, ok, v)
		}
	}
	if fooIP == "" || fooIP == api.Spec.ClusterIP {
		t.Errorf("fooservice's cluster IP %q", fooIP)
	}
	if got := env["nolinks"]["KUBERNETES_SERVICE_HOST"]; got != api.Spec.ClusterIP {
		t.Errorf("nolinks: KUBERNETES_SERVICE_HOST=%q, want %q", got, api.Spec.ClusterIP)
	}
	for pod, vars := range env {
		for k := range vars {
			if strings.HasPrefix(k, "PEERS_") || strings.HasPrefix(k, "OTHERSVC_") || (pod == "nolinks" && strings.HasPrefix(k, "FOOSERVICE_")) {
				t.Errorf("%s: unexpected %s", pod, k)
			}
		}
	}
}
