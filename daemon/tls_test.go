//go:build integration

package daemon_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"

	"github.com/skiff-sh/skiff/pki"
)

// newSkiffdOwnPKI is a skiffd that makes its PKI at its first start; the
// harness's clients come from the kubeconfig it writes.
func newSkiffdOwnPKI(t *testing.T, extra ...string) *skiffd {
	s := newSkiffd(t, extra...)
	if err := os.RemoveAll(filepath.Join(s.dataDir, "pki")); err != nil {
		t.Fatal(err)
	}
	s.ownPKI = true
	return s
}

// kubeconfigWorks lists namespaces with client-go through the kubeconfig.
func kubeconfigWorks(t *testing.T, what string, kubeconfig []byte) {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if cfg.Insecure {
		t.Errorf("%s skips verifying the server", what)
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("%s: client-go: %v", what, err)
	}
}

// TestTLSServing drives skiffd's TLS through its TCP listener: the PKI it
// makes at its first start, the kubeconfig it writes (client-go, kubectl
// 1.27, 1.32 and 1.33, Python's kubernetes client, pointed at the node's
// address too), HTTPS only with HTTP/2, --tls-san, a restart and a kill
// that keep the CA, a second skiffd refused, and the operator's own PKI.
func TestTLSServing(t *testing.T) {
	t.Parallel()
	s := newSkiffdOwnPKI(t, "--tls-san", "api.skiff.test")
	_, port, _ := net.SplitHostPort(s.addr)
	s.listen = ":" + port // every address; the harness dials 127.0.0.1
	s.start()
	ctx := context.Background()

	kubeconfig, err := os.ReadFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the written kubeconfig", func(t *testing.T) {
		if fi, err := os.Stat(s.kubeconfig); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("kubeconfig mode: %v %v, want 0600", fi.Mode(), err)
		}
		kc, err := clientcmd.Load(kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		cluster := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
		if cluster.Server != "https://127.0.0.1:"+port || cluster.InsecureSkipTLSVerify || len(cluster.CertificateAuthorityData) == 0 {
			t.Errorf("cluster %+v: want https://127.0.0.1:%s with the CA embedded", cluster, port)
		}
		certs, err := certutil.ParseCertsPEM(kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].ClientCertificateData)
		if err != nil {
			t.Fatal(err)
		}
		if subj := certs[0].Subject; subj.CommonName != "system:admin" || !slices.Equal(subj.Organization, []string{"system:masters"}) {
			t.Errorf("admin certificate subject %v", subj)
		}
		for _, f := range []string{"ca.crt", "ca.key", "serving.crt", "serving.key", "admin.crt", "admin.key", "service-account-ecdsa.key"} {
			if fi, err := os.Stat(filepath.Join(s.dataDir, "pki", f)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("pki/%s: %v, want a 0600 file", f, err)
			}
		}
		kubeconfigWorks(t, "the written kubeconfig", kubeconfig)
	})

	t.Run("kubectl and Python's client", func(t *testing.T) {
		for _, bin := range []string{"/usr/lib/google-cloud-sdk/bin/kubectl.1.27", "/usr/bin/kubectl", "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"} {
			out, err := s.kubectlCmd(bin, "get", "namespace", "default", "-o", "name").CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != "namespace/default" {
				t.Errorf("%s get namespace default: %v\n%s", bin, err, out)
			}
		}
		script := `import sys
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
print(client.CoreV1Api().read_namespace("default").metadata.name)`
		// Debian's python3, where make deps installs python3-kubernetes.
		out, err := exec.Command("/usr/bin/python3", "-c", script, s.kubeconfig).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "default" {
			t.Errorf("Python's kubernetes client: %v\n%s", err, out)
		}
	})

	t.Run("the kubeconfig pointed at the node's address", func(t *testing.T) {
		ip := nodeIP(t, s) // the node's InternalIP, as a user would find it
		remote := bytes.ReplaceAll(kubeconfig, []byte("https://127.0.0.1:"+port), []byte("https://"+net.JoinHostPort(ip, port)))
		if bytes.Equal(remote, kubeconfig) {
			t.Fatal("the kubeconfig names no https://127.0.0.1 server to replace")
		}
		kubeconfigWorks(t, "the kubeconfig at "+ip, remote)
		path := filepath.Join(t.TempDir(), "remote.yaml")
		if err := os.WriteFile(path, remote, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("kubectl", "--kubeconfig", path, "--cache-dir", t.TempDir(), "get", "namespace", "default", "-o", "name").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "namespace/default" {
			t.Errorf("kubectl at %s: %v\n%s", ip, err, out)
		}
	})

	t.Run("HTTPS only, HTTP/2 and HTTP/1.1", func(t *testing.T) {
		code, body := rawGet(t, http.DefaultClient, "http://127.0.0.1:"+port+"/version")
		if code != http.StatusBadRequest || !strings.Contains(body, "Client sent an HTTP request to an HTTPS server") {
			t.Errorf("plain HTTP to the TLS port: %d %q", code, body)
		}
		resp, err := s.get("/version")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Errorf("a client offering h2 got %s", resp.Proto)
		}
		resp, err = s.anonymousClient().Get(s.url("/version")) // offers http/1.1 only
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 1 || resp.StatusCode != http.StatusOK {
			t.Errorf("an HTTP/1.1 client got %s %s", resp.Proto, resp.Status)
		}
	})

	t.Run("--tls-san", func(t *testing.T) {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(s.caPEM)
		conn, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: roots, ServerName: "api.skiff.test"})
		if err != nil {
			t.Fatalf("the serving certificate for --tls-san api.skiff.test: %v", err)
		}
		conn.Close()
		if conn, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: roots, ServerName: "other.skiff.test"}); err == nil {
			conn.Close()
			t.Error("the serving certificate is valid for a name it was not given")
		}
	})

	t.Run("a second skiffd is refused", func(t *testing.T) {
		_, stderr, err := runSkiffd("--data-dir", s.dataDir, "--containerd-address", containerd.Address,
			"--listen", freeAddr(t), "--socket", filepath.Join(t.TempDir(), "s.sock"), "--write-kubeconfig", "")
		if err == nil || !strings.Contains(stderr, "another skiffd (pid ") || !strings.Contains(stderr, "is running on data dir "+s.dataDir) {
			t.Errorf("a second skiffd on the data dir: %v\n%s", err, stderr)
		}
		_, stderr, err = runSkiffd("--data-dir", t.TempDir(), "--containerd-address", containerd.Address,
			"--listen", freeAddr(t), "--socket", s.socket, "--write-kubeconfig", "")
		if err == nil || !strings.Contains(stderr, "another skiffd is serving on socket "+s.socket) {
			t.Errorf("a second skiffd on the socket: %v\n%s", err, stderr)
		}
		overSocket := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", s.socket)
		}}}
		if code, body := rawGet(t, overSocket, "http://skiffd/livez"); code != http.StatusOK {
			t.Errorf("the first skiffd's socket after the second was refused: %d %s", code, body)
		}
	})

	t.Run("a restart and a kill keep the CA", func(t *testing.T) {
		s.stop()
		s.start()
		kubeconfigWorks(t, "the first start's kubeconfig after a restart", kubeconfig)
		s.kill()
		s.start() // the lock went with the process; the stale socket is replaced
		kubeconfigWorks(t, "the first start's kubeconfig after a kill", kubeconfig)
		again, err := os.ReadFile(s.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, kubeconfig) {
			t.Error("the kubeconfig written after a restart differs from the first")
		}
	})

	t.Run("a new --tls-san at a restart", func(t *testing.T) {
		s.stop()
		s.extra = append(s.extra, "--tls-san", "new.skiff.test")
		s.start()
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(s.caPEM)
		for _, name := range []string{"new.skiff.test", "api.skiff.test"} {
			conn, err := tls.Dial("tcp", s.addr, &tls.Config{RootCAs: roots, ServerName: name})
			if err != nil {
				t.Errorf("after adding --tls-san new.skiff.test, %s: %v", name, err)
				continue
			}
			conn.Close()
		}
		kubeconfigWorks(t, "the first start's kubeconfig after a new --tls-san", kubeconfig)
	})

	t.Run("the operator's PKI", func(t *testing.T) {
		opDir := t.TempDir()
		op, err := pki.Load(pki.Config{Dir: filepath.Join(opDir, "pki"), SANs: []string{"op.skiff.test"}})
		if err != nil {
			t.Fatal(err)
		}
		read := func(name string) []byte {
			b, err := os.ReadFile(filepath.Join(opDir, "pki", name))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		leafPEM := read("serving.crt")
		certFile, keyFile, caFile := filepath.Join(opDir, "tls.crt"), filepath.Join(opDir, "tls.key"), filepath.Join(opDir, "client-ca.crt")
		for f, data := range map[string][]byte{certFile: append(slices.Clone(leafPEM), op.CABundle()...), keyFile: read("serving.key"), caFile: op.CABundle()} {
			if err := os.WriteFile(f, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s.stop()
		s.extra = append(s.extra, "--tls-cert-file", certFile, "--tls-private-key-file", keyFile, "--client-ca-file", caFile)
		s.start()
		written, err := os.ReadFile(s.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		kc, err := clientcmd.Load(written)
		if err != nil {
			t.Fatal(err)
		}
		if ca := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].CertificateAuthorityData; !bytes.Equal(ca, op.CABundle()) {
			t.Errorf("the kubeconfig's CA is not the operator's:\n%s", ca)
		}
		kubeconfigWorks(t, "the kubeconfig with the operator's CA", written)
		conn, err := tls.Dial("tcp", s.addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		leaf, err := certutil.ParseCertsPEM(leafPEM)
		if err != nil {
			t.Fatal(err)
		}
		if served := conn.ConnectionState().PeerCertificates[0]; !served.Equal(leaf[0]) {
			t.Errorf("skiffd serves %v, not the operator's certificate", served.Subject)
		}
		if _, err := s.client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			t.Error(err)
		}
	})
}
