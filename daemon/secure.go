package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/skiff-sh/skiff/pki"
)

// DefaultKubeconfig is where skiffd writes the admin's kubeconfig, as k3s
// writes /etc/rancher/k3s/k3s.yaml.
const DefaultKubeconfig = "/etc/skiff/skiff.yaml"

// lockDataDir takes an exclusive lock on the data dir for as long as
// skiffd runs (the kernel drops it when the process dies, kill -9
// included), so that a second skiffd on the same store refuses to start
// instead of sharing bbolt, containerd namespace and pod networks with the
// first.
func lockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, "skiffd.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the data dir's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another skiffd (pid %s) is running on data dir %s", string(holder), dir)
		}
		return nil, fmt.Errorf("locking the data dir %s: %w", dir, err)
	}
	// The holder's pid, for the message above: informative only.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
	}
	return func() { f.Close() }, nil
}

// claimSocket makes way for skiffd's socket at path: a socket a live
// skiffd answers on is refused, one a dead skiffd left is removed.
func claimSocket(path string) error {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(context.Background(), "unix", path)
	if err == nil {
		conn.Close()
		return fmt.Errorf("another skiffd is serving on socket %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing stale socket: %w", err)
	}
	return nil
}

// loadPKI loads (or makes, at the first start) skiffd's certificates
// under <data-dir>/pki. The serving certificate names the kubernetes
// Service's clusterIP: the first address of the Service range.
func loadPKI(cfg Config, services serviceNetwork) (*pki.PKI, error) {
	p, err := pki.Load(pki.Config{
		Dir:           filepath.Join(cfg.DataDir, "pki"),
		SANs:          cfg.TLSSANs,
		ServiceIP:     net.IP(services.cidr.Addr().Next().AsSlice()),
		ClusterDomain: services.domain,
		CertFile:      cfg.TLSCertFile,
		KeyFile:       cfg.TLSKeyFile,
		ClientCAFile:  cfg.ClientCAFile,
	})
	if err != nil {
		return nil, fmt.Errorf("the PKI: %w", err)
	}
	return p, nil
}

// kubeconfigServer is the URL a kubeconfig on this node reaches the API
// at: the address skiffd listens on, or 127.0.0.1 when it listens on all
// addresses, as k3s writes https://127.0.0.1:6443.
func kubeconfigServer(listen string) (string, error) {
	ap, err := netip.ParseAddrPort(listen)
	if err != nil {
		return "", fmt.Errorf("the API's address %q: %w", listen, err)
	}
	host := ap.Addr().Unmap()
	if host.IsUnspecified() {
		host = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	return "https://" + netip.AddrPortFrom(host, ap.Port()).String(), nil
}

// writeKubeconfig writes the admin's kubeconfig, the CA and the admin's
// client certificate embedded, whole (a reader never sees half of it) and
// with the given mode.
func writeKubeconfig(path string, mode os.FileMode, server string, p *pki.PKI) error {
	certPEM, keyPEM := p.AdminCredentials()
	const name = "default" // as k3s names its cluster, user and context
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{name: {Server: server, CertificateAuthorityData: p.CABundle()}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {ClientCertificateData: certPEM, ClientKeyData: keyPEM}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: name, AuthInfo: name}},
		CurrentContext: name,
	}
	data, err := clientcmd.Write(kc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if err := pki.WriteFileAtomic(path, data, mode); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return nil
}
