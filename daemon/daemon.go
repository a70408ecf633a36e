// Package daemon wires skiffd together: it opens the store, connects to (or
// starts) containerd, recovers the pods, starts the controllers and serves
// the API; on shutdown it stops them in reverse, leaving containers running.
package daemon

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/skiff-sh/skiff/api"
	"github.com/skiff-sh/skiff/daemon/cronjobcontroller"
	"github.com/skiff-sh/skiff/daemon/events"
	"github.com/skiff-sh/skiff/daemon/garbagecollector"
	"github.com/skiff-sh/skiff/daemon/jobcontroller"
	"github.com/skiff-sh/skiff/daemon/namespacecontroller"
	"github.com/skiff-sh/skiff/daemon/nodelifecycle"
	"github.com/skiff-sh/skiff/daemon/podgc"
	"github.com/skiff-sh/skiff/daemon/rbaccontroller"
	"github.com/skiff-sh/skiff/daemon/serviceaccountcontroller"
	"github.com/skiff-sh/skiff/daemon/tainteviction"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/internal/buildinfo"
	"github.com/skiff-sh/skiff/internal/memtrim"
	"github.com/skiff-sh/skiff/kube"
	"github.com/skiff-sh/skiff/kubelet"
	"github.com/skiff-sh/skiff/kubelet/podworker"
	"github.com/skiff-sh/skiff/kubelet/stats"
	"github.com/skiff-sh/skiff/logs"
	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
)

// Config is skiffd's configuration; cmd/skiffd fills it from flags.
type Config struct {
	DataDir             string
	ContainerdAddress   string
	ContainerdNamespace string
	ContainerdState     string // the state directory of the containerd at ContainerdAddress
	Listen              string // TCP address of the API (HTTPS); "" = none
	Socket              string // unix socket of the API; "" = none
	PodBackoffBase      time.Duration
	PodBackoffMax       time.Duration
	RestartBackoffBase  time.Duration
	RestartBackoffMax   time.Duration
	NodeName            string   // "" = the hostname
	LogDriver           string   // binary the shims run as log driver ("" = logs.DriverBinary beside this executable)
	ImportImages        []string // image tarballs (OCI or docker-archive) imported at start
	MaxImageSize        int64    // largest tarball POST /skiff/v1/images takes; 0 = api.DefaultMaxImageSize
	RegistryConfig      string   // docker config.json with registry credentials; "" = none
	ImageGCHigh         int      // image disk usage (percent) that starts image GC; 0 or 100 = off
	ImageGCLow          int      // usage image GC frees down to
	PodSubnet           string   // IPv4 range of the pods' own network namespaces
	PodBridge           string   // the host bridge pods are attached to
	// PodNetworkPool is how many pod networks are kept made ahead for the
	// next pods (--pod-network-pool; network.Config.PoolSize).
	PodNetworkPool int
	CNIBinDirs     []string // where the CNI plugins are; nil = network.DefaultPluginDirs
	ServiceCIDR    string   // IPv4 range of ClusterIPs ("" = api.DefaultServiceCIDR)
	ClusterDomain  string   // the cluster DNS domain ("" = cluster.local)
	ResolvConf     string   // the host's resolver configuration pods and the cluster DNS use ("" = /etc/resolv.conf)
	// SystemReserved is kept from pods (the kubelet's --system-reserved):
	// the node's allocatable is its capacity minus this (cpu, memory,
	// ephemeral-storage).
	SystemReserved corev1.ResourceList
	// RequestTimeout bounds a request that is not long-running (its body
	// and its response; kube-apiserver's --request-timeout); 0 = 60s.
	RequestTimeout time.Duration
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound the reads
	// and writes the API serves at once (kube-apiserver's flags of those
	// names); 0 = no limit.
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	// Profiling serves Go's profiles at /debug/pprof/ (--profiling).
	Profiling bool
	// MaxContainers caps the containers running at once (--max-containers);
	// 0 = derived from the machine's PID limit and memory, < 0 = no cap.
	MaxContainers int
	// RuntimeHandlers map RuntimeClass handlers to containerd runtimes
	// (--runtime-handler), beside "runc" (podworker.DefaultRuntimeHandlers).
	RuntimeHandlers map[string]string
	// SeccompDefault runs containers that name no seccomp profile with
	// RuntimeDefault (--seccomp-default, the kubelet's flag); Unconfined
	// without it, as a kubelet left at its default.
	SeccompDefault bool
	// ContainerLogRotation is the container log rotation policy, the
	// kubelet's --container-log-max-size and --container-log-max-files
	// (zero = never rotate).
	ContainerLogRotation logs.Rotation
	// NodeLeaseDuration is the node's heartbeat Lease duration, renewed
	// every quarter of it (the kubelet's nodeLeaseDurationSeconds); 0 =
	// kubelet.DefaultNodeLeaseDuration.
	NodeLeaseDuration time.Duration
	// NodeMonitorGracePeriod is how long a client-created Node's heartbeat
	// may stand still before it is marked unreachable (kube-controller-
	// manager's --node-monitor-grace-period); 0 = nodelifecycle.DefaultGracePeriod.
	NodeMonitorGracePeriod time.Duration
	// SweepInterval is how often leftovers of pod instances are swept
	// (0 = a minute).
	SweepInterval time.Duration
	// TLSSANs are extra names (DNS names, addresses) of the serving
	// certificate (--tls-san).
	TLSSANs []string
	// TLSCertFile and TLSKeyFile are the operator's serving certificate and
	// key; "" = skiffd's own, made under <data-dir>/pki.
	TLSCertFile, TLSKeyFile string
	// ClientCAFile holds CAs whose client certificates are trusted besides
	// skiffd's own CA; "" = none.
	ClientCAFile string
	// WriteKubeconfig is where the admin's kubeconfig is written at each
	// start ("" = nowhere), with mode WriteKubeconfigMode.
	WriteKubeconfig     string
	WriteKubeconfigMode os.FileMode
	// Ready, if set, is called with the API's addresses once skiffd serves.
	Ready func(listen, socket string)
	// Status, if set, is told in a few words what skiffd is doing while it
	// starts (systemd's STATUS= line).
	Status func(string)
	// Metrics is the registry /metrics serves: the API's, the Job
	// controller's, the kubelet's, the store's, Go's and the process's
	// metrics are registered in it; nil = a new one.
	Metrics *prometheus.Registry
	// ServiceAccountIssuer is the iss of ServiceAccount tokens
	// (--service-account-issuer; "" = serviceaccount.DefaultIssuer), and
	// APIAudiences the audiences the API accepts them for
	// (--api-audiences; nil = the issuer).
	ServiceAccountIssuer string
	APIAudiences         []string
	// ServiceAccountMaxTokenExpiration shortens longer token requests to
	// it (--service-account-max-token-expiration); 0 = none.
	ServiceAccountMaxTokenExpiration time.Duration
	// AdvertiseAddress is the node address pods reach the API at, the
	// kubernetes Service's endpoint (--advertise-address; "" = the node's
	// InternalIP).
	AdvertiseAddress string
	// StatsInterval is the time between two samples of the containers'
	// usage, the window of kubectl top's CPU figures; 0 = stats.DefaultInterval.
	StatsInterval time.Duration
	// TokenAuthFile is kube-apiserver's --token-auth-file: static bearer
	// tokens in CSV; "" = none.
	TokenAuthFile string
}

// withProcessMetrics registers Go's and the process's collectors with reg
// (a new registry when nil) and returns it.
func withProcessMetrics(reg *prometheus.Registry) *prometheus.Registry {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// status reports what skiffd is doing to cfg.Status, if set.
func (cfg Config) status(s string) {
	if cfg.Status != nil {
		cfg.Status(s)
	}
}

var (
	_ podworker.Runtime = (*runtime.Runtime)(nil)
	_ api.Streams       = (*kubelet.Streams)(nil)
)

// Run runs skiffd until ctx ends.
func Run(ctx context.Context, cfg Config) (retErr error) {
	routeKlog(logrus.StandardLogger().WriterLevel(logrus.DebugLevel))
	if err := cfg.ContainerLogRotation.Validate(); err != nil {
		return fmt.Errorf("container log rotation: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}
	unlock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer unlock()
	// NOTE: beside the start-up, not after it: the first write after ready
	// would wait for it (50 ms), and nothing else needs it.
	go api.PrepareWrites()
	if cfg.Socket != "" {
		// Early, before anything is started on behalf of a skiffd that
		// cannot serve; serve claims it again when it listens.
		if err := claimSocket(cfg.Socket); err != nil {
			return err
		}
	}
	logDriver, err := findLogDriver(cfg.LogDriver)
	if err != nil {
		return err
	}
	node, err := kubelet.DescribeNode(cfg.NodeName)
	if err != nil {
		return err
	}
	services, err := checkServiceNetwork(cfg)
	if err != nil {
		return err
	}
	certs, err := loadPKI(cfg, services)
	if err != nil {
		return err
	}
	reg := withProcessMetrics(cfg.Metrics)
	cfg.status("opening the store")
	store, err := db.Open(filepath.Join(cfg.DataDir, "skiff.db"), db.WithMetrics(reg))
	if err != nil {
		return fmt.Errorf("opening store: %w", err)
	}
	defer closeLogged("store", store.Close)
	ident, err := newIdentity(cfg, store, certs)
	if err != nil {
		return err
	}
	retryNamespaces, err := startOrRetry("creating the system namespaces", func() error {
		return namespacecontroller.EnsureSystemNamespaces(store)
	})
	if err != nil {
		return fmt.Errorf("creating the system namespaces: %w", err)
	}
	retryRBAC, err := startOrRetry("reconciling the default RBAC roles", func() error {
		return rbaccontroller.EnsureDefaults(store)
	})
	if err != nil {
		return fmt.Errorf("reconciling the default RBAC roles: %w", err)
	}
	authenticator, err := newAuthenticator(cfg, certs.ClientCAs, ident.authenticator)
	if err != nil {
		return err
	}

	// NOTE: before containerd, so that a pod subnet refused ends skiffd at once.
	podNet, err := startPodNetwork(cfg, node, services)
	if err != nil {
		return err
	}

	cfg.status("connecting to containerd")
	address, containerdState, stopContainerd, err := connectContainerd(ctx, cfg)
	if err != nil {
		return err
	}
	defer stopContainerd()
	rtOpts := []runtime.Option{
		runtime.WithContainerdState(containerdState),
		runtime.WithFIFODir(filepath.Join(runDir(cfg), "fifo")),
		runtime.WithLogDriverArg(cfg.ContainerLogRotation.Arg),
	}
	if cfg.RegistryConfig != "" {
		rtOpts = append(rtOpts, runtime.WithRegistryConfig(cfg.RegistryConfig))
	}
	rt, err := runtime.New(ctx, address, cfg.ContainerdNamespace, logDriver, rtOpts...)
	if err != nil {
		return fmt.Errorf("connecting to containerd at %s: %w", address, err)
	}
	defer closeLogged("containerd client", rt.Close)
	containerdVersion, err := rt.Version(ctx)
	if err != nil {
		return fmt.Errorf("asking containerd its version: %w", err)
	}
	logrus.WithFields(logrus.Fields{"address": address, "version": containerdVersion}).Info("containerd connected")
	if len(cfg.ImportImages) > 0 {
		cfg.status("importing images")
	}
	retryImports, err := startOrRetry("importing images", func() error {
		return importImages(ctx, rt, cfg.ImportImages)
	})
	if err != nil {
		return err
	}

	maxContainers := cfg.MaxContainers
	if maxContainers == 0 {
		var why string
		maxContainers, why = kubelet.DefaultMaxContainers(node.Memory.Value())
		logrus.WithField("max", maxContainers).Info("containers running at once capped by the machine: " + why)
	}
	logRoot := filepath.Join(cfg.DataDir, "logs")
	facts := kubelet.GatherNodeFacts(cfg.DataDir, containerdVersion, cfg.SystemReserved)
	broadcaster := events.NewBroadcaster(events.Config{Store: store, Linger: eventLinger})
	retryNode, err := startOrRetry("registering node "+node.Name, func() error {
		return kubelet.StartNode(store, node, facts, broadcaster)
	})
	if err != nil {
		return fmt.Errorf("registering node %s: %w", node.Name, err)
	}
	cfg.status("starting the controllers")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var errMu sync.Mutex
	goRun := func(name string, run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil && ctx.Err() == nil {
				errMu.Lock()
				retErr = errors.Join(retErr, fmt.Errorf("%s: %w", name, err))
				errMu.Unlock()
				cancel()
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()

	for what, retry := range map[string]func(context.Context) error{
		"system namespaces": retryNamespaces, "image import": retryImports, "node registration": retryNode,
		"default RBAC roles": retryRBAC,
	} {
		if retry != nil {
			goRun(what, retry)
		}
	}
	goRun("events", broadcaster.Run)
	if err := startServices(store, services, cfg.ResolvConf, goRun); err != nil {
		return err
	}
	goRun("namespace controller", namespacecontroller.New(namespacecontroller.Config{Store: store}).Run)
	goRun("serviceaccount controller", serviceaccountcontroller.New(serviceaccountcontroller.Config{
		Store: store, CABundle: ident.pki.CABundle()}).Run)
	goRun("clusterrole aggregation controller", rbaccontroller.New(rbaccontroller.Config{Store: store}).Run)
	rbacCache := rbaccontroller.NewCache(store)
	goRun("rbac cache", rbacCache.Run)
	goRun("node status", func(ctx context.Context) error {
		return kubelet.RunNodeStatus(ctx, store, node, facts, kubelet.NodeStatusInterval)
	})
	goRun("node lease", func(ctx context.Context) error {
		return kubelet.RunNodeLease(ctx, store, node, facts, broadcaster, cmp.Or(cfg.NodeLeaseDuration, kubelet.DefaultNodeLeaseDuration))
	})

	goRun("pod network pool", podNet.RunPool)
	goRun("pod worker", podworker.New(podworker.Config{
		Store:                    store,
		Runtime:                  rt,
		NodeName:                 node.Name,
		HostIP:                   node.HostIP,
		LogRoot:                  logRoot,
		CPU:                      node.CPU,
		Memory:                   node.Memory,
		ReservedCPU:              cfg.SystemReserved[corev1.ResourceCPU],
		ReservedMemory:           cfg.SystemReserved[corev1.ResourceMemory],
		EphemeralStorage:         facts.Storage,
		ReservedEphemeralStorage: cfg.SystemReserved[corev1.ResourceEphemeralStorage],
		VolumeRoot:               filepath.Join(cfg.DataDir, "volumes"),
		SeccompRoot:              filepath.Join(cfg.DataDir, "seccomp"),
		SeccompDefault:           cfg.SeccompDefault,
		MaxContainers:            max(maxContainers, 0),
		RestartBackoffBase:       cfg.RestartBackoffBase,
		RestartBackoffMax:        cfg.RestartBackoffMax,
		SweepInterval:            cfg.SweepInterval,
		Recorder:                 broadcaster.NewRecorder(corev1.EventSource{Component: "kubelet", Host: node.Name}),
		SchedulerRecorder:        broadcaster.NewRecorder(corev1.EventSource{Component: "default-scheduler"}),
		Network:                  podNet,
		Metrics:                  podworker.NewMetrics(reg),
		Tokens:                   ident.tokens,
		RuntimeHandlers:          cfg.RuntimeHandlers,
	}).Run)
	goRun("job controller", jobcontroller.New(jobcontroller.Config{
		Store:       store,
		BackoffBase: cfg.PodBackoffBase,
		BackoffMax:  cfg.PodBackoffMax,
		Recorder:    broadcaster.NewRecorder(corev1.EventSource{Component: "job-controller"}),
		// The API's own pod create strategy (api.Config's NodeName and
		// NamespaceLifecycle below).
		Pods:    kube.PodStrategy{NodeName: node.Name, NamespaceLifecycle: true, ServiceAccounts: true},
		Metrics: jobcontroller.NewMetrics(reg),
	}).Run)
	goRun("cronjob controller", cronjobcontroller.New(cronjobcontroller.Config{
		Store:    store,
		Recorder: broadcaster.NewRecorder(corev1.EventSource{Component: "cronjob-controller"}),
		// The API's own Job create strategy (its NamespaceLifecycle below).
		Jobs: kube.JobStrategy{NamespaceLifecycle: true},
	}).Run)
	usage := stats.New(stats.Config{Source: rt, Interval: cfg.StatsInterval, Metrics: reg})
	goRun("resource usage", usage.Run)
	goRun("image garbage collector", func(ctx context.Context) error {
		return kubelet.CollectImages(ctx, store, rt, cfg.ImageGCHigh, cfg.ImageGCLow)
	})
	goRun("taint eviction controller", tainteviction.New(tainteviction.Config{
		Store: store, Recorder: broadcaster.NewRecorder(corev1.EventSource{Component: tainteviction.Component})}).Run)
	goRun("node lifecycle controller", nodelifecycle.New(nodelifecycle.Config{
		Store: store, NodeName: node.Name, GracePeriod: cfg.NodeMonitorGracePeriod}).Run)
	goRun("pod garbage collector", podgc.New(podgc.Config{Store: store, NodeName: node.Name}).Run)
	goRun("garbage collector", garbagecollector.New(garbagecollector.Config{Store: store}).Run)

	handler := api.New(api.Config{
		Store:    store,
		NodeName: node.Name,
		Version:  buildinfo.Info(),
		Streams:  kubelet.NewStreams(rt, store, logRoot, podNet),
		ReadyChecks: []api.Check{{Name: "containerd", Check: func(ctx context.Context) error {
			_, err := rt.Version(ctx)
			return err
		}}},
		NamespaceLifecycle: true,
		ServiceAccounts:    true,
		Tokens:             ident.tokens,
		Images:             imageService{rt},
		MaxImageSize:       cfg.MaxImageSize,
		ServiceCIDR:        services.cidr,
		RequestTimeout:     cfg.RequestTimeout,

		MaxRequestsInFlight:         cfg.MaxRequestsInFlight,
		MaxMutatingRequestsInFlight: cfg.MaxMutatingRequestsInFlight,
		Metrics:                     reg,
		ResourceMetrics:             usage,
		Authenticator:               authenticator,
		Profiling:                   cfg.Profiling,
		RBAC:                        rbacCache,
	})
	servers, listen, socket, err := serve(cfg, handler, certs.TLSConfig())
	if err != nil {
		cancel()
		return err
	}
	if cfg.WriteKubeconfig != "" && listen != "" {
		server, err := kubeconfigServer(listen)
		if err == nil {
			err = writeKubeconfig(cfg.WriteKubeconfig, cfg.WriteKubeconfigMode, server, certs)
		}
		if err != nil {
			cancel()
			return err
		}
		logrus.WithField("path", cfg.WriteKubeconfig).Info("kubeconfig written")
	}
	for _, s := range servers {
		goRun("http server", s.run)
	}
	if listen != "" {
		keepAPIService, err := publishAPIService(cfg, store, services, node, listen)
		if err != nil {
			return err
		}
		goRun("kubernetes service", keepAPIService)
	}
	logrus.WithFields(logrus.Fields{"listen": listen, "socket": socket, "node": node.Name}).Info("skiffd serving")
	if cfg.Ready != nil {
		cfg.Ready(listen, socket)
	}
	goRun("start-up pages", func(ctx context.Context) error { return dropStartupPages(ctx, store) })
	<-ctx.Done()
	shutdownCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	for _, s := range servers {
		s.shutdown(shutdownCtx)
	}
	return nil
}

// eventLinger is how long the first of a burst of Events waits for the rest,
// to be written in one commit. A pod's start and exit record a burst each
// (Scheduled, Pulled, Created, Started; the Job's SuccessfulCreate): at
// parallelism 8 the events cost three of a pod's eight commits, and a
// tenth of a second is nothing to kubectl describe or a watch on Events.
const eventLinger = 100 * time.Millisecond

// startupSettle is how long after it serves skiffd gives its start-up
// (the controllers' first lists and syncs) before it drops what only
// start-up needed.
const startupSettle = 10 * time.Second

// dropStartupPages gives up, once start-up is over, what start-up alone
// used: the heap its lists and schemas freed (the Go runtime would give it
// back over minutes), the mappings of the pages of skiffd's code and
// read-only data that package initialisation touched once, and those of
// the store's file, which the first lists and syncs read whole (memtrim,
// db.Store.WithMapping). What runs again is mapped back.
func dropStartupPages(ctx context.Context, store *db.Store) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(startupSettle):
	}
	debug.FreeOSMemory()
	released, err := memtrim.ExecutableReadOnly()
	if err != nil {
		logrus.WithError(err).Warn("dropping start-up's pages of skiffd's executable")
	}
	storeSize, err := store.WithMapping(memtrim.Range)
	if err != nil {
		logrus.WithError(err).Warn("dropping start-up's pages of the store")
	}
	logrus.WithFields(logrus.Fields{
		"executable": fmt.Sprintf("%.1f MiB", float64(released)/(1<<20)),
		"store":      fmt.Sprintf("%.1f MiB", float64(storeSize)/(1<<20)),
	}).Debug("dropped start-up's mappings of skiffd's executable and store")
	return nil
}

// startPodNetwork configures the pod network and checks that it works. A
// pod subnet that overlaps a route of the host is refused: pods would
// shadow part of the node's network. Any other fault is logged in one line
// and shown on the pods, which wait for it to be fixed (never falling back
// to the host's network).
func startPodNetwork(cfg Config, node kubelet.Node, services serviceNetwork) (*network.Network, error) {
	podNet, err := network.New(network.Config{
		DataDir:       filepath.Join(cfg.DataDir, "network"),
		PluginDirs:    cfg.CNIBinDirs,
		Subnet:        cfg.PodSubnet,
		Bridge:        cfg.PodBridge,
		HostIP:        node.HostIP,
		ClusterDomain: services.domain,
		ResolvConf:    cfg.ResolvConf,
		ClusterDNS:    services.dnsIP,
		PoolSize:      cfg.PodNetworkPool,
	})
	if err != nil {
		return nil, fmt.Errorf("configuring the pod network: %w", err)
	}
	// NOTE: before any pod's network is set up or torn down: what an
	// earlier skiffd made ahead and no pod took goes (RunPool).
	if err := podNet.SweepPool(); err != nil {
		logrus.WithError(err).Warn("removing the pod networks an earlier run made ahead")
	}
	err = podNet.Prepare()
	switch {
	case errors.Is(err, network.ErrSubnetOverlap):
		return nil, fmt.Errorf("%w: choose a --pod-subnet that no route of this host covers", err)
	case err != nil:
		logrus.Errorf("%v: pods without hostNetwork wait in ContainerCreating, retried, until this is fixed", err)
	}
	return podNet, nil
}

type server struct {
	srv *http.Server
	ln  net.Listener
	tls bool // serve HTTPS (srv.TLSConfig) on ln
}

func (s *server) run(context.Context) error {
	var err error
	if s.tls {
		// The certificate comes from TLSConfig.GetCertificate.
		err = s.srv.ServeTLS(s.ln, "", "")
	} else {
		err = s.srv.Serve(s.ln)
	}
	if !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *server) shutdown(ctx context.Context) {
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
}

// serve opens the TCP listener, HTTPS only (HTTP/2 included), and the unix
// socket, root-only and plain: only root can connect to it. A socket a live
// skiffd answers on is left alone and refused.
func serve(cfg Config, h http.Handler, tlsConfig *tls.Config) (servers []*server, listen, socket string, err error) {
	newServer := func(ln net.Listener) *server {
		// NOTE: no WriteTimeout: it would cut `logs -f` and watches. Those
		// streams end on shutdown instead: their requests' base context is
		// cancelled when Shutdown starts.
		base, cancel := context.WithCancel(context.Background())
		srv := &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 30 * time.Second,
			IdleTimeout:       2 * time.Minute,
			BaseContext:       func(net.Listener) context.Context { return base },
			// What net/http says of a connection (a failed TLS handshake: a
			// client that does not trust the CA, a port scanner) goes to
			// skiffd's log in its format, as kube-apiserver logs it.
			ErrorLog: log.New(logrus.StandardLogger().WriterLevel(logrus.InfoLevel), "", 0),
		}
		srv.RegisterOnShutdown(cancel)
		return &server{ln: ln, srv: srv}
	}
	if cfg.Listen != "" {
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return nil, "", "", fmt.Errorf("listening on %s: %w", cfg.Listen, err)
		}
		s := newServer(ln)
		s.srv.TLSConfig, s.tls = tlsConfig, true
		servers = append(servers, s)
		listen = ln.Addr().String()
	}
	if cfg.Socket != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.Socket), 0o755); err != nil {
			return nil, "", "", fmt.Errorf("creating socket dir: %w", err)
		}
		if err := claimSocket(cfg.Socket); err != nil {
			return nil, "", "", err
		}
		ln, err := net.Listen("unix", cfg.Socket)
		if err != nil {
			return nil, "", "", fmt.Errorf("listening on %s: %w", cfg.Socket, err)
		}
		if err := os.Chmod(cfg.Socket, 0o600); err != nil {
			ln.Close()
			return nil, "", "", fmt.Errorf("restricting socket: %w", err)
		}
		servers = append(servers, newServer(ln))
		socket = cfg.Socket
	}
	return servers, listen, socket, nil
}

// importImages side-loads image tarballs, for nodes without a registry.
func importImages(ctx context.Context, rt *runtime.Runtime, paths []string) error {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("importing image: %w", err)
		}
		names, err := rt.ImportImage(ctx, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("importing image %s: %w", p, err)
		}
		logrus.WithFields(logrus.Fields{"file": p, "images": names}).Info("images imported")
	}
	return nil
}

func closeLogged(what string, close func() error) {
	if err := close(); err != nil {
		logrus.WithError(err).Errorf("closing %s", what)
	}
}

// ParseRuntimeHandler parses a --runtime-handler value, NAME=RUNTIME_TYPE:
// the RuntimeClass handler NAME (a DNS label, as a RuntimeClass's handler
// must be) runs its pods' containers with the containerd runtime
// RUNTIME_TYPE ("io.containerd.runc.v2", or another shim's name).
func ParseRuntimeHandler(s string) (name, runtimeType string, err error) {
	name, runtimeType, ok := strings.Cut(s, "=")
	if !ok || runtimeType == "" {
		return "", "", fmt.Errorf("runtime-handler %q: want NAME=RUNTIME_TYPE, such as runc=io.containerd.runc.v2", s)
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return "", "", fmt.Errorf("runtime-handler %q: %s", name, strings.Join(msgs, "; "))
	}
	return name, runtimeType, nil
}

// ParseSystemReserved parses a --system-reserved value as the kubelet's
// flag takes it: "cpu=500m,memory=1Gi,ephemeral-storage=1Gi" (other
// resources are accepted and ignored).
func ParseSystemReserved(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("system-reserved %q: want name=quantity", kv)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("system-reserved %s: %w", name, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("system-reserved %s: negative quantity %s", name, value)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}
