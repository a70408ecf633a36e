package podworker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skiff-sh/skiff/kubelet/prober"
	"github.com/skiff-sh/skiff/runtime"
)

// The User-Agents of the kubelet's HTTP probes and HTTP lifecycle hooks.
const (
	probeUserAgent = "kube-probe/1.34"
	hookUserAgent  = "kube-lifecycle/1.34"
)

// maxProbeBody is how much of an HTTP probe's response body is read.
const maxProbeBody = 10 * 1024

// runProbe runs one probe of instance id within timeout: prober.Unknown
// when the probe could not be run (the kubelet throws such results away).
// output says why a probe failed, as the kubelet's Unhealthy event does.
func (r *containerRun) runProbe(ctx context.Context, id string, p *corev1.Probe, timeout time.Duration) (res prober.Result, output string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	switch {
	case p.Exec != nil:
		res, err = r.execProbe(ctx, id, p.Exec.Command)
	case p.HTTPGet != nil:
		res, err = r.httpProbe(ctx, p.HTTPGet, probeUserAgent)
	case p.TCPSocket != nil:
		res, err = r.tcpProbe(ctx, p.TCPSocket)
	case p.GRPC != nil:
		res, err = r.grpcProbe(ctx, p.GRPC, timeout)
	default:
		return prober.Unknown, ""
	}
	if err == nil {
		return res, ""
	}
	if res == prober.Unknown {
		r.log.WithError(err).Debug("probe failed to run")
	}
	return res, err.Error()
}

// probeFailure is a failed probe's output: what the command printed, or
// why the connection or the answer did not do.
type probeFailure string

func (f probeFailure) Error() string { return string(f) }

// execProbe runs command in the container: exit code 0 passes; running
// past the timeout fails (as with the kubelet's ExecProbeTimeout).
func (r *containerRun) execProbe(ctx context.Context, id string, command []string) (prober.Result, error) {
	out := &limitedBuffer{max: maxProbeBody}
	code, err := r.w.m.cfg.Runtime.Exec(ctx, id, runtime.ExecConfig{Args: command, Stdout: out, Stderr: out})
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return prober.Failure, probeFailure(fmt.Sprintf("command %q timed out", command))
	case err != nil:
		return prober.Unknown, err
	case code != 0:
		return prober.Failure, probeFailure(out.String())
	}
	return prober.Success, nil
}

// limitedBuffer keeps the first max bytes written to it (an exec probe's
// output, as the kubelet's) and takes the rest without keeping it.
type limitedBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// probeHost is where network probes go: the given host, else the pod's IP.
func (r *containerRun) probeHost(host string) string {
	if host != "" {
		return host
	}
	return podIP(r.pod, r.w.m.node)
}

// probePort resolves a probe's port: a number, or the name of one of the
// container's ports.
func (r *containerRun) probePort(port intstr.IntOrString) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range r.spec.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("couldn't find port %q in container %q", port.StrVal, r.spec.Name)
}

// httpProbe GETs the URL: a status from 200 to 399 passes. Redirects are
// followed on the same host only; one to another host passes, as with the
// kubelet. userAgent tells a probe (probeUserAgent) from a hook.
func (r *containerRun) httpProbe(ctx context.Context, g *corev1.HTTPGetAction, userAgent string) (prober.Result, error) {
	port, err := r.probePort(g.Port)
	if err != nil {
		return prober.Failure, err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if path == "" || path[0] != '/' {
		path = "/" + path
	}
	host := r.probeHost(g.Host)
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	if u, err = u.Parse(path); err != nil {
		return prober.Failure, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return prober.Failure, err
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true, Proxy: nil},
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if next.URL.Hostname() != host || len(via) >= 10 {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return prober.Failure, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProbeBody))
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		return prober.Failure, probeFailure(fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode))
	}
	return prober.Success, nil
}

// tcpProbe passes when a TCP connection opens.
func (r *containerRun) tcpProbe(ctx context.Context, t *corev1.TCPSocketAction) (prober.Result, error) {
	port, err := r.probePort(t.Port)
	if err != nil {
		return prober.Failure, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(r.probeHost(t.Host), strconv.Itoa(port)))
	if err != nil {
		return prober.Failure, err
	}
	conn.Close()
	return prober.Success, nil
}

// grpcProbe asks the gRPC health service (grpc.health.v1) for the service:
// SERVING passes.
func (r *containerRun) grpcProbe(ctx context.Context, g *corev1.GRPCAction, timeout time.Duration) (prober.Result, error) {
	addr := net.JoinHostPort(r.probeHost(""), strconv.Itoa(int(g.Port)))
	conn, err := grpc.DialContext(ctx, addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent(probeUserAgent),
		grpc.WithBlock(),
	)
	// The failures say what the kubelet's gRPC prober says.
	if errors.Is(err, context.DeadlineExceeded) {
		return prober.Failure, probeFailure(fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err))
	}
	if err != nil {
		return prober.Failure, probeFailure(fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err))
	}
	defer conn.Close()
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	switch status.Code(err) {
	case codes.OK:
	case codes.Unimplemented:
		return prober.Failure, probeFailure(fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", status.Convert(err).Message()))
	case codes.DeadlineExceeded:
		return prober.Failure, probeFailure(fmt.Sprintf("timeout: health rpc did not complete within %v", timeout))
	default:
		return prober.Failure, probeFailure(fmt.Sprintf("error: health rpc probe failed: %+v", err))
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return prober.Failure, probeFailure(fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()))
	}
	return prober.Success, nil
}
