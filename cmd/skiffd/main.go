// Command skiffd serves the Kubernetes Job and Pod API on one machine and
// runs the pods through containerd. Run as `skiffd log-driver PATH` it is
// the containerd log driver that writes one container's log file.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/skiff-sh/skiff/daemon"
	"github.com/skiff-sh/skiff/logs"
	"github.com/skiff-sh/skiff/network"
	"github.com/skiff-sh/skiff/runtime"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == logs.DriverArg {
		if err := logs.RunDriver(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "skiffd log-driver:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == imagesCommand {
		if err := runImages(context.Background(), os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "skiffd images:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "skiffd:", err)
		os.Exit(1)
	}
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
	fs.DurationVar(&cfg.SweepInterval, "sweep-interval", time.Minute, "how often leftovers of pod instances (containers, snapshots, shims, network namespaces, logs) are looked for and removed")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:7070", "TCP address of the API (plain HTTP; keep it on loopback)")
	fs.StringVar(&cfg.Socket, "socket", "/run/skiff/skiff.sock", "unix socket of the API (root only)")
	fs.DurationVar(&cfg.PodBackoffBase, "pod-backoff-base", 10*time.Second, "delay before a failed Job pod is replaced, doubled per failure")
	fs.DurationVar(&cfg.PodBackoffMax, "pod-backoff-max", 10*time.Minute, "cap of the Job pod replacement delay")
	fs.DurationVar(&cfg.RestartBackoffBase, "restart-backoff-base", 10*time.Second, "delay before a crashed container is restarted, doubled per restart (CrashLoopBackOff)")
	fs.DurationVar(&cfg.RestartBackoffMax, "restart-backoff-max", 5*time.Minute, "cap of the container restart delay")
	fs.StringVar(&cfg.RegistryConfig, "registry-config", "", "docker config.json holding registry credentials (auths)")
	fs.IntVar(&cfg.ImageGCHigh, "image-gc-high-threshold", 85, "image disk usage percent that starts removing unused images (100 = never)")
	fs.IntVar(&cfg.ImageGCLow, "image-gc-low-threshold", 80, "image disk usage percent image garbage collection frees down to")
	fs.StringVar(&cfg.PodSubnet, "pod-subnet", network.DefaultSubnet, "IPv4 range of the pods' network (must not overlap the host's routes)")
	fs.StringVar(&cfg.PodBridge, "pod-bridge", network.DefaultBridge, "host bridge the pods are attached to")
	fs.StringVar(&cfg.NodeName, "node-name", "", "name of this node (default: the hostname)")
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
	cfg.ContainerLogRotation = logs.Rotation{MaxSize: logs.DefaultMaxSize, MaxFiles: logs.DefaultMaxFiles}
	fs.Func("container-log-max-size", "size a container log file reaches before it is rotated, as the kubelet's flag (default 10Mi; 0 or negative: never)", func(v string) error {
		n, err := parseLogMaxSize(v)
		cfg.ContainerLogRotation.MaxSize = n
		return err
	})
	fs.IntVar(&cfg.ContainerLogRotation.MaxFiles, "container-log-max-files", logs.DefaultMaxFiles, "most log files kept per container instance, the current one included (> 1)")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	level, err := logrus.ParseLevel(*logLevel)
	if err != nil {
		return err
	}
	logrus.SetLevel(level)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return daemon.Run(ctx, cfg)
}
