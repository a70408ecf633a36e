package podworker

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/skiff-sh/skiff/kubelet/prober"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// probeRun is a container run whose pod has IP 127.0.0.1.
func probeRun(t *testing.T, ports ...corev1.ContainerPort) *containerRun {
	t.Helper()
	pod := testPod()
	pod.Status.PodIP = "127.0.0.1"
	pod.Spec.Containers[0].Ports = ports
	w := testWorker(t, pod)
	return &containerRun{w: w, pod: pod, spec: &pod.Spec.Containers[0], log: w.log}
}

func hostPort(t *testing.T, rawURL string) (string, int) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	return u.Hostname(), port
}

func TestHTTPProbe(t *testing.T) {
	var gotUA, gotHost, gotHeader string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotHost, gotHeader = r.UserAgent(), r.Host, r.Header.Get("X-Probe")
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/redirect-local":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/redirect-away":
			http.Redirect(w, r, "http://example.invalid/", http.StatusFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	_, port := hostPort(t, srv.URL)
	r := probeRun(t, corev1.ContainerPort{Name: "web", ContainerPort: int32(port)})
	tests := map[string]struct {
		action corev1.HTTPGetAction
		want   prober.Result
	}{
		"200":                        {action: corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt(port)}, want: prober.Success},
		"named port":                 {action: corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("web")}, want: prober.Success},
		"503":                        {action: corev1.HTTPGetAction{Path: "/down", Port: intstr.FromInt(port)}, want: prober.Failure},
		"local redirect is followed": {action: corev1.HTTPGetAction{Path: "/redirect-local", Port: intstr.FromInt(port)}, want: prober.Success},
		"redirect elsewhere passes":  {action: corev1.HTTPGetAction{Path: "/redirect-away", Port: intstr.FromInt(port)}, want: prober.Success},
		"unknown port name":          {action: corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("nope")}, want: prober.Failure},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, _ := r.httpProbe(context.Background(), &tc.action, probeUserAgent)
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	headers := corev1.HTTPGetAction{Path: "ok", Port: intstr.FromInt(port), HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "1"}, {Name: "Host", Value: "example.com"}}}
	if got, err := r.httpProbe(context.Background(), &headers, probeUserAgent); got != prober.Success {
		t.Errorf("with headers: %v %v", got, err)
	}
	if gotUA != "kube-probe/1.34" || gotHost != "example.com" || gotHeader != "1" {
		t.Errorf("last request: User-Agent %q, Host %q, X-Probe %q", gotUA, gotHost, gotHeader)
	}
}

func TestTCPProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	r := probeRun(t)
	if got, err := r.tcpProbe(context.Background(), &corev1.TCPSocketAction{Port: intstr.FromInt(port)}); got != prober.Success {
		t.Errorf("open port: %v %v", got, err)
	}
	ln.Close()
	if got, _ := r.tcpProbe(context.Background(), &corev1.TCPSocketAction{Port: intstr.FromInt(port)}); got != prober.Failure {
		t.Errorf("closed port: %v, want failure", got)
	}
}

func TestGRPCProbe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	defer srv.Stop()
	port := int32(ln.Addr().(*net.TCPAddr).Port)
	r := probeRun(t)
	tests := map[string]struct {
		service *string
		want    prober.Result
	}{
		"serving":     {want: prober.Success},
		"not serving": {service: ptr("db"), want: prober.Failure},
		"unknown":     {service: ptr("nope"), want: prober.Failure},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if got, err := r.grpcProbe(ctx, &corev1.GRPCAction{Port: port, Service: tc.service}, 5*time.Second); got != tc.want {
				t.Errorf("got %v (%v), want %v", got, err, tc.want)
			}
		})
	}
}
