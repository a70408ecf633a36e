package main

import (
	"context"
	"errors"
	"flag"
	"net"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-sh/skiff/internal/buildinfo"
)

// The local skiffd's endpoints, as skiffd's flags default them: its
// root-only socket, and the kubeconfig it writes for its admin.
const (
	defaultSocket     = "/run/skiff/skiff.sock"
	defaultKubeconfig = "/etc/skiff/skiff.yaml"
)

// connectOptions pick the API server to talk to.
type connectOptions struct {
	kubeconfig string // a kubeconfig file ("" = $KUBECONFIG if set)
	context    string // its context ("" = the current one)
	server     string // a URL instead of a kubeconfig
	socket     string // a unix socket instead of a kubeconfig
}

func (o *connectOptions) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file to use (default: $KUBECONFIG if set)")
	fs.StringVar(&o.context, "context", "", "kubeconfig context to use")
	fs.StringVar(&o.server, "server", "", "URL of the API server, e.g. https://127.0.0.1:6443 (overrides the kubeconfig's, whose CA and credentials it keeps)")
	fs.StringVar(&o.socket, "socket", "", "unix socket of a local skiffd (default "+defaultSocket+" when it answers, else the kubeconfig at "+defaultKubeconfig+")")
}

// config is the client configuration and the namespace it names ("" when
// it names none): --socket, a kubeconfig (--kubeconfig or $KUBECONFIG, its
// server overridden by --server, as kubectl's), --server alone, or else the
// local skiffd — its socket when this user may connect to it, else the
// kubeconfig skiffd writes.
func (o connectOptions) config() (*rest.Config, string, error) {
	if o.socket != "" && o.server+o.kubeconfig != "" {
		return nil, "", errors.New("--socket excludes --server and --kubeconfig")
	}
	if o.context != "" && o.server+o.socket != "" {
		return nil, "", errors.New("--context needs a kubeconfig, not --server or --socket")
	}
	var cfg *rest.Config
	ns := ""
	var err error
	switch {
	case o.socket != "":
		cfg = socketConfig(o.socket)
	case o.kubeconfig != "" || os.Getenv("KUBECONFIG") != "":
		if cfg, ns, err = o.fromKubeconfig(o.kubeconfig); err != nil {
			return nil, "", err
		}
	case o.server != "":
		cfg = &rest.Config{Host: o.server}
	case o.context != "":
		return nil, "", errors.New("--context needs a kubeconfig: --kubeconfig or $KUBECONFIG")
	case socketAnswers(defaultSocket):
		cfg = socketConfig(defaultSocket)
	default:
		if cfg, ns, err = o.fromKubeconfig(defaultKubeconfig); err != nil {
			return nil, "", err
		}
	}
	cfg.UserAgent = "skiff/" + buildinfo.Version()
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, ns, nil
}

// fromKubeconfig loads a kubeconfig as kubectl does (path, else
// $KUBECONFIG), with --context and --server over it, and the namespace its
// context names.
func (o connectOptions) fromKubeconfig(path string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	overrides.ClusterInfo.Server = o.server
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	ns := ""
	if n, _, err := loader.Namespace(); err == nil {
		ns = n // the context's, "default" when it has none
	}
	return cfg, ns, nil
}

// socketConfig talks HTTP over the unix socket at path.
func socketConfig(path string) *rest.Config {
	return &rest.Config{
		Host: "http://localhost",
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
	}
}

// socketAnswers is whether this user can connect to the socket at path.
func socketAnswers(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
