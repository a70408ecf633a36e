// Command skiffd serves the Kubernetes Job and Pod API on one machine and
// runs the pods through containerd; their log files are written by
// skiff-log-driver (cmd/skiff-log-driver), which it expects beside itself.
// `skiffd version`, `skiffd images` and `skiffd backup` are small clients
// of it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	// NOTE: the tz database is built in, as in kube-apiserver and
	// kube-controller-manager: a CronJob's timeZone must mean the same on
	// a minimal edge node without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiff-sh/skiff/api"
	"github.com/skiff-sh/skiff/daemon"
	"github.com/skiff-sh/skiff/daemon/nodelifecycle"
	"github.com/skiff-sh/skiff/kubelet/stats"
	"github.com/skiff-sh/skiff/logs"
	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
	"github.com/skiff-sh/skiff/serviceaccount"
)

func main() {
	if len(os.Args) > 1 {
		if sub, ok := subcommands[os.Args[1]]; ok {
			if err := sub(context.Background(), os.Args[2:], os.Stdout); err != nil && !errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(os.Stderr, "skiffd %s: %v\n", os.Args[1], err)
				os.Exit(1)
			}
			return
		}
	}
	if err := run(os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "skiffd:", err)
		os.Exit(1)
	}
}

// subcommands are skiffd's commands besides serving; each gets the
// arguments after its name.
var subcommands = map[string]func(ctx context.Context, args []string, stdout io.Writer) error{
	imagesCommand:  runImages,
	versionCommand: runVersion,
	backupCommand:  runBackup,
}

// parseLogMaxSize reads a size the way the kubelet reads
// --container-log-max-size: a resource quantity such as 10Mi.
func parseLogMaxSize(v string) (int64, error) {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, err
	}
	n, ok := q.AsInt64()
	if !ok {
		return 0, fmt.Errorf("invalid max log size %q", v)
	}
	return n, nil
}

func run(args []string) error {
	fs := flag.NewFlagSet("skiffd", flag.ContinueOnError)
	var cfg daemon.Config
	fs.StringVar(&cfg.DataDir, "data-dir", "/var/lib/skiff", "directory for the store, logs and the embedded containerd")
	fs.StringVar(&cfg.ContainerdAddress, "containerd-address", "/run/containerd/containerd.sock", "containerd socket; if none answers, skiffd starts its own containerd")
	fs.StringVar(&cfg.ContainerdNamespace, "containerd-namespace", "skiff", "containerd namespace for skiff's images and containers")
	fs.StringVar(&cfg.ContainerdState, "containerd-state", runtime.DefaultContainerdState, "state directory of the containerd at --containerd-address (its config's state), where leftover shim bundles are swept")
	fs.DurationVar(&cfg.StatsInterval, "metric-resolution", stats.DefaultInterval, "time between two samples of the containers' and the node's usage: the window of kubectl top's CPU figures")
	fs.DurationVar(&cfg.SweepInterval, "sweep-interval", time.Minute, "how often leftovers of pod instances (containers, snapshots, shims, network namespaces, logs) are looked for and removed")
	fs.Func("node-lease-duration", "how long the node's heartbeat Lease (kube-node-lease/<node>) holds, in whole seconds, renewed every quarter of it (the kubelet's nodeLeaseDurationSeconds; default 40s)", func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d%time.Second != 0 {
			return fmt.Errorf("want whole seconds, at least 1s, not %q", v)
		}
		cfg.NodeLeaseDuration = d
		return nil
	})
	fs.DurationVar(&cfg.NodeMonitorGracePeriod, "node-monitor-grace-period", nodelifecycle.DefaultGracePeriod, "how long a Node created by a client (no kubelet behind it) may go without a heartbeat before it is marked Unknown and tainted unreachable, as kube-controller-manager's flag")
	fs.StringVar(&cfg.Listen, "listen", ":6443", "TCP address of the API (HTTPS only, HTTP/2 included)")
	fs.Func("tls-san", "extra DNS name or IP address of the serving certificate, besides the hostname, the node's addresses, localhost and the kubernetes Service's names; repeatable, or comma-separated", func(v string) error {
		for _, san := range strings.Split(v, ",") {
			if san = strings.TrimSpace(san); san != "" {
				cfg.TLSSANs = append(cfg.TLSSANs, san)
			}
		}
		return nil
	})
	fs.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "the operator's serving certificate (PEM, leaf first, then its chain), re-read when it changes; default: one skiffd makes under <data-dir>/pki")
	fs.StringVar(&cfg.TLSKeyFile, "tls-private-key-file", "", "the key of --tls-cert-file")
	fs.StringVar(&cfg.ClientCAFile, "client-ca-file", "", "CAs (PEM) whose client certificates authenticate users (CN = user, O = groups), besides skiffd's own CA")
	fs.StringVar(&cfg.WriteKubeconfig, "write-kubeconfig", daemon.DefaultKubeconfig, "where the admin's kubeconfig is written at each start (\"\" = nowhere)")
	fs.Func("write-kubeconfig-mode", "file mode of --write-kubeconfig, in octal (default 0600)", func(v string) error {
		m, err := strconv.ParseUint(v, 8, 32)
		if err != nil || m > 0o777 {
			return fmt.Errorf("want an octal file mode such as 0600, not %q", v)
		}
		cfg.WriteKubeconfigMode = os.FileMode(m)
		return nil
	})
	cfg.WriteKubeconfigMode = 0o600
	fs.StringVar(&cfg.Socket, "socket", "/run/skiff/skiff.sock", "unix socket of the API (root only)")
	fs.StringVar(&cfg.TokenAuthFile, "token-auth-file", "", "static bearer tokens of the API, kube-apiserver's CSV: token,user,uid,\"group1,group2\"")
	fs.DurationVar(&cfg.PodBackoffBase, "pod-backoff-base", 10*time.Second, "delay before a failed Job pod is replaced, doubled per failure")
	fs.DurationVar(&cfg.PodBackoffMax, "pod-backoff-max", 10*time.Minute, "cap of the Job pod replacement delay")
	fs.DurationVar(&cfg.RestartBackoffBase, "restart-backoff-base", 10*time.Second, "delay before a crashed container is restarted, doubled per restart (CrashLoopBackOff)")
	fs.DurationVar(&cfg.RestartBackoffMax, "restart-backoff-max", 5*time.Minute, "cap of the container restart delay")
	fs.StringVar(&cfg.RegistryConfig, "registry-config", "", "docker config.json holding registry credentials (auths)")
	fs.IntVar(&cfg.ImageGCHigh, "image-gc-high-threshold", 85, "image disk usage percent that starts removing unused images (100 = never)")
	fs.IntVar(&cfg.ImageGCLow, "image-gc-low-threshold", 80, "image disk usage percent image garbage collection frees down to")
	fs.StringVar(&cfg.PodSubnet, "pod-subnet", network.DefaultSubnet, "IPv4 range of the pods' network (must not overlap the host's routes)")
	fs.StringVar(&cfg.PodBridge, "pod-bridge", network.DefaultBridge, "host bridge the pods are attached to")
	fs.IntVar(&cfg.PodNetworkPool, "pod-network-pool", network.DefaultPoolSize, "pod networks (namespace, address, veth) kept made ahead so that the next pods without hostPorts start without waiting for theirs (0 = none)")
	fs.Func("cni-bin-dir", "comma-separated directories holding the CNI plugins (default "+strings.Join(network.DefaultPluginDirs, ",")+")", func(v string) error {
		cfg.CNIBinDirs = strings.Split(v, ",")
		return nil
	})
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", api.DefaultServiceCIDR, "IPv4 range of Services' ClusterIPs (must overlap neither the pod subnet nor the host's routes)")
	fs.StringVar(&cfg.ClusterDomain, "cluster-domain", daemon.DefaultClusterDomain, "DNS domain of Services and pods, served by skiffd's cluster DNS")
	fs.StringVar(&cfg.ResolvConf, "resolv-conf", network.DefaultResolvConf, "resolver configuration pods inherit and the cluster DNS forwards other names to, as the kubelet's flag")
	fs.StringVar(&cfg.NodeName, "node-name", "", "name of this node (default: the hostname)")
	fs.StringVar(&cfg.ServiceAccountIssuer, "service-account-issuer", serviceaccount.DefaultIssuer, "iss of the ServiceAccount tokens skiffd issues, as kube-apiserver's flag")
	fs.Func("api-audiences", "audiences the API accepts ServiceAccount tokens for, comma-separated (default: the issuer)", func(v string) error {
		cfg.APIAudiences = strings.Split(v, ",")
		return nil
	})
	// NOTE: kube-apiserver refuses a maximum under an hour; skiff takes
	// shorter ones, so that a node's token refresh can be watched.
	fs.DurationVar(&cfg.ServiceAccountMaxTokenExpiration, "service-account-max-token-expiration", 0, "longest ServiceAccount token issued: longer requests are shortened to it, as kube-apiserver's flag (0 = no limit)")
	fs.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "address of this node at which pods reach the API, the kubernetes Service's endpoint (default: the node's InternalIP)")
	fs.StringVar(&cfg.LogDriver, "log-driver", "", "the containers' log driver binary (default: "+logs.DriverBinary+" beside skiffd)")
	fs.Func("import-image", "import an image tarball (OCI or docker-archive) at start; repeatable", func(p string) error {
		cfg.ImportImages = append(cfg.ImportImages, p)
		return nil
	})
	fs.Func("max-image-size", "largest image tarball POST /skiff/v1/images takes, a quantity such as 16Gi (default 16Gi)", func(v string) error {
		n, err := parseLogMaxSize(v)
		if err == nil && n <= 0 {
			err = fmt.Errorf("max image size %q must be positive", v)
		}
		cfg.MaxImageSize = n
		return err
	})
	fs.Func("system-reserved", "resources kept from pods, as the kubelet's flag: cpu=500m,memory=1Gi,ephemeral-storage=10Gi", func(v string) error {
		r, err := daemon.ParseSystemReserved(v)
		cfg.SystemReserved = r
		return err
	})
	fs.Func("runtime-handler", "RuntimeClass handler and the containerd runtime that runs its pods, NAME=RUNTIME_TYPE (runc=io.containerd.runc.v2 is always there); repeatable", func(v string) error {
		name, runtimeType, err := daemon.ParseRuntimeHandler(v)
		if err != nil {
			return err
		}
		if cfg.RuntimeHandlers == nil {
			cfg.RuntimeHandlers = map[string]string{}
		}
		cfg.RuntimeHandlers[name] = runtimeType
		return nil
	})
	fs.BoolVar(&cfg.SeccompDefault, "seccomp-default", false, "run containers whose security context names no seccomp profile with RuntimeDefault instead of Unconfined, as the kubelet's flag")
	cfg.ContainerLogRotation = logs.Rotation{MaxSize: logs.DefaultMaxSize, MaxFiles: logs.DefaultMaxFiles}
	fs.Func("container-log-max-size", "size a container log file reaches before it is rotated, as the kubelet's flag (default 10Mi; 0 or negative: never)", func(v string) error {
		n, err := parseLogMaxSize(v)
		cfg.ContainerLogRotation.MaxSize = n
		return err
	})
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", api.DefaultRequestTimeout, "how long a request that is not long-running (not a watch, log, exec, attach or image import) may take to send its body and read its answer, as kube-apiserver's flag")
	reads, writes := api.DefaultMaxInFlight(goruntime.NumCPU())
	fs.IntVar(&cfg.MaxRequestsInFlight, "max-requests-inflight", reads, "reads (not watches, logs, exec or attach) the API serves at once, 429 beyond, as kube-apiserver's flag (default 8 per CPU; 0 = no limit)")
	fs.IntVar(&cfg.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", writes, "writes the API serves at once, 429 beyond (default 4 per CPU; 0 = no limit)")
	fs.BoolVar(&cfg.Profiling, "profiling", true, "serve Go's profiles at /debug/pprof/, as kube-apiserver's flag")
	fs.IntVar(&cfg.MaxContainers, "max-containers", 0, "containers running at once on the node; past it containers wait (0 = derived from the PID limit and memory, -1 = no cap)")
	fs.IntVar(&cfg.ContainerLogRotation.MaxFiles, "container-log-max-files", logs.DefaultMaxFiles, "most log files kept per container instance, the current one included (> 1)")
	logLevel := fs.String("log-level", "info", "log level: debug (every request too), info, warn, error")
	logFormat := fs.String("log-format", "text", "log format: text, or json (one object a line, for journald or Loki pipelines)")
	showVersion := fs.Bool("version", false, "print skiffd's version (and the containerd's at --containerd-address) and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *showVersion {
		return printVersion(context.Background(), os.Stdout, cfg.ContainerdAddress)
	}
	if err := setupLogging(*logLevel, *logFormat); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	notifySystemd(ctx, &cfg)
	return daemon.Run(ctx, cfg)
}

// setupLogging sets logrus' level and format from the flags.
func setupLogging(level, format string) error {
	l, err := logrus.ParseLevel(level)
	if err != nil {
		return err
	}
	logrus.SetLevel(l)
	switch format {
	case "text":
	case "json":
		logrus.SetFormatter(&logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano})
	default:
		return fmt.Errorf("--log-format %q: want text or json", format)
	}
	return nil
}
