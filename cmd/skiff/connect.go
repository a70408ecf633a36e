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

// The local skiffd's endpoints, as skiffd's flags default them.
const (
	defaultSocket = "/run/skiff/skiff.sock"
	defaultServer = "http://127.0.0.1:7070"
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
	fs.StringVar(&o.server, "server", "", "URL of the API server, e.g. http://127.0.0.1:7070")
	fs.StringVar(&o.socket, "socket", "", "unix socket of a local skiffd (default "+defaultSocket+" when it answers, else "+defaultServer+")")
}

// config is the client configuration and the namespace it names ("" when
// it names none): --server, --socket, a kubeconfig (--kubeconfig or
// $KUBECONFIG), or else the local skiffd — its socket when this user may
// connect to it, its loopback port otherwise.
func (o connectOptions) config() (*rest.Config, string, error) {
	set := 0
	for _, v := range []string{o.server, o.socket, o.kubeconfig} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return nil, "", errors.New("--server, --socket and --kubeconfig are exclusive")
	}
	if o.context != "" && o.server+o.socket != "" {
		return nil, "", errors.New("--context needs a kubeconfig, not --server or --socket")
	}
	var cfg *rest.Config
	ns := ""
	switch {
	case o.server != "":
		cfg = &rest.Config{Host: o.server}
	case o.socket != "":
		cfg = socketConfig(o.socket)
	case o.kubeconfig != "" || os.Getenv("KUBECONFIG") != "":
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = o.kubeconfig
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context})
		var err error
		if cfg, err = loader.ClientConfig(); err != nil {
			return nil, "", err
		}
		if n, _, err := loader.Namespace(); err == nil {
			ns = n // the context's, "default" when it has none
		}
	case o.context != "":
		return nil, "", errors.New("--context needs a kubeconfig: --kubeconfig or $KUBECONFIG")
	case socketAnswers(defaultSocket):
		cfg = socketConfig(defaultSocket)
	default:
		cfg = &rest.Config{Host: defaultServer}
	}
	cfg.UserAgent = "skiff/" + buildinfo.Version()
	cfg.QPS, cfg.Burst = 50, 100
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
