package api

import (
	"net/http"
	"net/netip"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/version"

	"github.com/skiff-sh/skiff/authn"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kube"
)

// Config is what the API needs from the daemon.
type Config struct {
	Store *db.Store
	// LogRoot is the root of the container log files:
	// kube.ContainerLogPath(LogRoot, pod, container, attempt).
	LogRoot string
	// NodeName is the name of this node; bare Pods created without
	// spec.nodeName are bound to it (skiff has no scheduler).
	NodeName string
	// ReadyChecks are the daemon's checks of /readyz (containerd answers),
	// after ping and the store's own (store, storage).
	ReadyChecks []Check
	// Version is served at /version (GitVersion "v1.34.0-skiff" style).
	Version version.Info
	// Streams runs exec and attach sessions; nil = those subresources
	// answer 503.
	Streams Streams
	// NamespaceLifecycle: objects may only be created in a namespace that
	// exists and is not terminating (kube-apiserver's admission plugin of
	// that name). The daemon sets it; without it any namespace is accepted.
	NamespaceLifecycle bool
	// ServiceAccounts: new pods are admitted as kube-apiserver's
	// ServiceAccount admission plugin does (kube.PodStrategy). The daemon
	// sets it; without it pods need no ServiceAccount.
	ServiceAccounts bool
	// Images imports image tarballs posted to ImagesPath; nil = that
	// endpoint answers 503.
	Images Images
	// Tokens issues ServiceAccount tokens (serviceaccounts/<name>/token);
	// nil = that subresource answers 503.
	Tokens TokenRequests
	// MaxImageSize bounds a posted image tarball in bytes (413 beyond);
	// 0 = DefaultMaxImageSize.
	MaxImageSize int64
	// ServiceCIDR is the range Services' ClusterIPs come from
	// (--service-cidr); the zero Prefix = DefaultServiceCIDR. It must pass
	// CheckServiceCIDR.
	ServiceCIDR netip.Prefix
	// RequestTimeout bounds how long a request that is not long-running
	// may take to send its body and read its response (kube-apiserver's
	// --request-timeout); 0 = DefaultRequestTimeout, < 0 = none.
	RequestTimeout time.Duration
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound the reads
	// and the writes that are not long-running served at once (429
	// beyond; see DefaultMaxInFlight); 0 = no limit.
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	// Metrics is the registry the API adds its request metrics to and
	// serves at MetricsPath (with whatever else the daemon registered);
	// nil = a registry of the API's own.
	Metrics *prometheus.Registry
	// ResourceMetrics measures the pods and the node for
	// metrics.k8s.io (kubectl top); nil = that group is not served.
	ResourceMetrics ResourceMetrics
	// Authenticator decides who sent each request that does not come over
	// the unix socket; with it every request is authorized by RBAC (kube's
	// filter chain, withAuth). nil = requests are not authenticated nor
	// authorized: the socket's are the admin's, the others anonymous.
	Authenticator *authn.Authenticator
}

// server holds the handlers' shared state.
type server struct {
	cfg          Config
	store        *db.Store
	openapi      *openAPIDocs
	serviceRange *serviceRange
	// pods is the pod create strategy, shared with the Job controller.
	pods kube.PodStrategy
}

// New returns the HTTP handler of the whole API: one route table behind
// logging and panic-recovery middleware. Streams (watches, log follows) end
// when their request's context ends: to end them on shutdown, give the
// http.Server a BaseContext that is cancelled from RegisterOnShutdown.
func New(cfg Config) http.Handler {
	if !cfg.ServiceCIDR.IsValid() {
		cfg.ServiceCIDR = netip.MustParsePrefix(DefaultServiceCIDR)
	}
	svcRange, err := newServiceRange(cfg.ServiceCIDR)
	if err != nil {
		panic("api: " + err.Error() + " (the daemon checks it with CheckServiceCIDR)")
	}
	s := &server{cfg: cfg, store: cfg.Store, openapi: newOpenAPIDocs(cfg.Version), serviceRange: svcRange,
		pods: kube.PodStrategy{NodeName: cfg.NodeName, NamespaceLifecycle: cfg.NamespaceLifecycle,
			ServiceAccounts: cfg.ServiceAccounts}}
	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(notFound)
	r.MethodNotAllowedHandler = http.HandlerFunc(notFound)
	s.routes(r)
	timeout := cfg.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	limited := withMaxInFlight(cfg.MaxRequestsInFlight, cfg.MaxMutatingRequestsInFlight, r)
	reg := cfg.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	scrape, api := metricsHandler(reg), withRequestTimeout(timeout, limited)
	// NOTE: a scrape takes no read seat and no request timeout of the
	// API's: it is bounded by its own (metricsHandler), so scrapes never
	// hold up the API nor the API scrapes.
	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == MetricsPath {
			scrape.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
	var handler http.Handler = routed
	if cfg.Authenticator != nil {
		handler = s.withAuth(routed)
	}
	return withLogging(withRequestMetrics(newRequestMetrics(reg), withRecovery(handler)))
}
