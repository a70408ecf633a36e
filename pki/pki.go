// Package pki keeps skiffd's certificates and keys: a CA, the API's serving
// certificate, the admin's client certificate and the ServiceAccount
// signing key, under one directory (as k3s keeps its own under its data dir).
//
// Everything is created at the first start and reused after, so that a
// kubeconfig written once keeps working across restarts. Files are 0600 and
// written whole (a temporary file renamed into place): a kill -9 mid-write
// leaves the old file or none, never half of one. A file that does not parse
// is taken for one an interrupted first start left behind and made again.
//
// The serving certificate is checked again while skiffd serves: it is
// re-issued before it expires and whenever the names it must carry change
// (a new --tls-san, a node address that came or went), with no restart,
// since TLSConfig hands it out through GetCertificate.
package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/utils/clock"
)

// Lifetimes of what the PKI issues. A leaf is renewed once less than
// RenewBefore of it is left, as k3s renews its certificates 90 days ahead.
const (
	LeafLifetime = 365 * 24 * time.Hour
	RenewBefore  = 90 * 24 * time.Hour
	// checkInterval is how often a handshake may look again whether the
	// serving certificate is due (its expiry, the node's addresses).
	checkInterval = time.Minute
)

// File names under Config.Dir.
const (
	caCertFile      = "ca.crt"
	caKeyFile       = "ca.key"
	servingCertFile = "serving.crt"
	servingKeyFile  = "serving.key"
	adminCertFile   = "admin.crt"
	adminKeyFile    = "admin.key"
	saKeyFile       = "service-account-ecdsa.key"
	// saRSAKeyFile is the signing key of skiffd before 2026-12: kept, if
	// there, to verify the tokens it signed (legacy token Secrets, the
	// tokens of running pods).
	saRSAKeyFile = "service-account.key"
)

// Config says where the PKI lives and which names the serving certificate
// carries besides those it always carries.
type Config struct {
	// Dir holds the generated files (created 0700 if missing).
	Dir string
	// SANs are extra names (DNS names or IP addresses) of the serving
	// certificate, --tls-san. The hostname, every node address, 127.0.0.1,
	// ::1, localhost and the kubernetes Service's names are always in it.
	SANs []string
	// ServiceIP is the kubernetes Service's clusterIP (the first address
	// of the Service range); nil = none.
	ServiceIP net.IP
	// ClusterDomain is the cluster DNS domain ("" = cluster.local).
	ClusterDomain string
	// CertFile and KeyFile, when set, are the operator's serving
	// certificate (chain first, leaf first) and key, re-read when they
	// change; the generated serving certificate is then not used.
	CertFile, KeyFile string
	// ClientCAFile, when set, holds CAs whose client certificates are
	// trusted besides skiff's own CA (which keeps the written
	// kubeconfig's admin certificate valid).
	ClientCAFile string
}

// PKI hands out skiffd's certificates and keys.
type PKI struct {
	cfg      Config
	clock    clock.PassiveClock
	nodeIPs  func() ([]net.IP, error)
	hostname func() (string, error)
	// write writes a leaf's files (writeFileAtomic; tests fail it).
	write func(path string, data []byte) error

	caCert   *x509.Certificate
	caKey    crypto.Signer
	caPEM    []byte
	bundle   []byte
	clientCA *x509.CertPool
	saKey    *ecdsa.PrivateKey
	saOldKey *rsa.PublicKey // nil without saRSAKeyFile
	adminCrt []byte
	adminKey []byte

	mu       sync.Mutex
	serving  *tls.Certificate
	checked  time.Time // when serving was last checked
	operator []byte    // the operator's cert and key files as last read
}

// Load creates what is missing under cfg.Dir, re-issues what is due, and
// returns the PKI.
func Load(cfg Config) (*PKI, error) {
	return load(cfg, clock.RealClock{}, nodeIPs, os.Hostname)
}

func load(cfg Config, clk clock.PassiveClock, ips func() ([]net.IP, error), host func() (string, error)) (*PKI, error) {
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = "cluster.local"
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the PKI directory: %w", err)
	}
	// What a write cut short by a crash left: never read, only removed.
	if leftovers, err := filepath.Glob(filepath.Join(cfg.Dir, ".*.tmp*")); err == nil {
		for _, f := range leftovers {
			os.Remove(f)
		}
	}
	p := &PKI{cfg: cfg, clock: clk, nodeIPs: ips, hostname: host, write: writeFileAtomic}
	if err := p.loadCA(); err != nil {
		return nil, err
	}
	if err := p.loadServiceAccountKey(); err != nil {
		return nil, err
	}
	if err := p.loadAdmin(); err != nil {
		return nil, err
	}
	p.clientCA = x509.NewCertPool()
	p.clientCA.AddCert(p.caCert)
	if cfg.ClientCAFile != "" {
		certs, err := certutil.CertsFromFile(cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("reading --client-ca-file: %w", err)
		}
		for _, c := range certs {
			p.clientCA.AddCert(c)
		}
	}
	p.bundle = p.caPEM
	if cfg.CertFile != "" {
		if err := p.loadOperatorServing(); err != nil {
			return nil, err
		}
	} else if err := p.checkServing(true); err != nil {
		return nil, err
	}
	return p, nil
}

// TLSConfig is the API's TLS configuration: the serving certificate
// through GetCertificate (renewed without a restart), client certificates
// requested but not verified here (the x509 authenticator verifies them
// against ClientCAs, so a certificate of another CA is a 401, not a failed
// handshake), HTTP/2 and HTTP/1.1.
func (p *PKI) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		ClientAuth: tls.RequestClientCert,
		ClientCAs:  p.clientCA, // only named to clients, as acceptable issuers
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.current()
		},
	}
}

// CABundle is the PEM of the CA(s) clients trust the serving certificate
// with: what kubeconfigs embed and pods find in ca.crt.
func (p *PKI) CABundle() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.bundle)
}

// ClientCAs are the CAs client certificates are verified against.
func (p *PKI) ClientCAs() *x509.CertPool { return p.clientCA }

// ServiceAccountKey signs ServiceAccount tokens: an ECDSA P-256 key (ES256,
// which kube-apiserver signs with when given such a key): its signature
// costs a hundredth of an RSA-2048 one, paid once for each pod.
func (p *PKI) ServiceAccountKey() *ecdsa.PrivateKey { return p.saKey }

// ServiceAccountPublicKeys are the keys ServiceAccount tokens are verified
// with (kube-apiserver's --service-account-key-file): the signing key's,
// and the RSA key an earlier skiffd signed with, if it left one.
func (p *PKI) ServiceAccountPublicKeys() []crypto.PublicKey {
	keys := []crypto.PublicKey{&p.saKey.PublicKey}
	if p.saOldKey != nil {
		keys = append(keys, p.saOldKey)
	}
	return keys
}

// AdminCredentials are the PEM certificate and key of the admin user
// (CN system:admin, O system:masters), signed by skiff's CA.
func (p *PKI) AdminCredentials() (certPEM, keyPEM []byte) {
	return slices.Clone(p.adminCrt), slices.Clone(p.adminKey)
}

// current returns the serving certificate, looking at most once per
// checkInterval whether it is due for renewal or its files changed.
func (p *PKI) current() (*tls.Certificate, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.clock.Since(p.checked) >= checkInterval {
		var err error
		if p.cfg.CertFile != "" {
			err = p.loadOperatorServingLocked()
		} else {
			err = p.checkServingLocked(false)
		}
		if err != nil {
			// The old certificate serves on; the next check tries again.
			logrus.WithError(err).Warn("renewing the serving certificate")
		}
	}
	return p.serving, nil
}

func (p *PKI) path(name string) string { return filepath.Join(p.cfg.Dir, name) }

// loadCA reads the CA, or creates it when it is missing or torn.
func (p *PKI) loadCA() error {
	certPEM, certErr := readIfExists(p.path(caCertFile))
	keyPEM, keyErr := readIfExists(p.path(caKeyFile))
	if certErr != nil {
		return certErr
	}
	if keyErr != nil {
		return keyErr
	}
	if certPEM != nil && keyPEM != nil {
		c, k, err := parsePair(certPEM, keyPEM)
		if err == nil && c.IsCA {
			p.caCert, p.caKey, p.caPEM = c, k, certPEM
			return nil
		}
		logrus.WithError(err).Warn("the CA's files do not make a CA; making a new CA")
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	ca, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "skiff-ca@" + fmt.Sprint(p.clock.Now().Unix()), NotBefore: p.clock.Now()}, key)
	if err != nil {
		return fmt.Errorf("making the CA: %w", err)
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	certPEM = pemCert(ca)
	// The key goes first: a cert without its key is torn and made again.
	if err := writeFileAtomic(p.path(caKeyFile), keyPEM); err != nil {
		return err
	}
	if err := writeFileAtomic(p.path(caCertFile), certPEM); err != nil {
		return err
	}
	p.caCert, p.caKey, p.caPEM = ca, key, certPEM
	return nil
}

// loadServiceAccountKey reads the ServiceAccount signing key, or creates
// it when missing or torn, and the RSA key of an earlier skiffd if there.
func (p *PKI) loadServiceAccountKey() error {
	old, err := readIfExists(p.path(saRSAKeyFile))
	if err != nil {
		return err
	}
	if old != nil {
		k, perr := keyutil.ParsePrivateKeyPEM(old)
		if rk, ok := k.(*rsa.PrivateKey); perr == nil && ok {
			p.saOldKey = &rk.PublicKey
		} else {
			logrus.Warnf("%s does not parse as an RSA key; the tokens it signed are refused", p.path(saRSAKeyFile))
		}
	}
	data, err := readIfExists(p.path(saKeyFile))
	if err != nil {
		return err
	}
	if data != nil {
		k, perr := keyutil.ParsePrivateKeyPEM(data)
		if ek, ok := k.(*ecdsa.PrivateKey); perr == nil && ok && ek.Curve == elliptic.P256() {
			p.saKey = ek
			return nil
		}
		logrus.Warn("the ServiceAccount key does not parse as an ECDSA P-256 key; making a new one")
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	data, err = keyutil.MarshalPrivateKeyToPEM(k)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(p.path(saKeyFile), data); err != nil {
		return err
	}
	p.saKey = k
	return nil
}

// loadAdmin reads the admin's client certificate, or issues it when it is
// missing, torn, not the CA's, or due.
func (p *PKI) loadAdmin() error {
	crt, key, err := p.leaf(adminCertFile, adminKeyFile, func(c *x509.Certificate) bool {
		return c.Subject.CommonName == "system:admin" && slices.Equal(c.Subject.Organization, []string{"system:masters"})
	}, func() *x509.Certificate {
		return &x509.Certificate{
			Subject:     pkix.Name{CommonName: "system:admin", Organization: []string{"system:masters"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
	})
	if err != nil {
		return fmt.Errorf("the admin certificate: %w", err)
	}
	p.adminCrt, p.adminKey = crt, key
	return nil
}

func (p *PKI) checkServing(force bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkServingLocked(force)
}

// checkServingLocked makes sure the generated serving certificate carries
// today's names and is not due, re-issuing it if need be.
func (p *PKI) checkServingLocked(force bool) error {
	dns, ips, err := p.servingNames()
	if err != nil {
		return err
	}
	p.checked = p.clock.Now()
	if !force && p.serving != nil && p.serving.Leaf != nil && sameNames(p.serving.Leaf, dns, ips) && !p.due(p.serving.Leaf) {
		return nil
	}
	crt, key, err := p.leaf(servingCertFile, servingKeyFile, func(c *x509.Certificate) bool {
		return sameNames(c, dns, ips)
	}, func() *x509.Certificate {
		return &x509.Certificate{
			Subject:     pkix.Name{CommonName: "skiffd"},
			DNSNames:    dns,
			IPAddresses: ips,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
	})
	if err != nil {
		return fmt.Errorf("the serving certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return err
	}
	p.serving = &pair
	return nil
}

func (p *PKI) loadOperatorServing() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loadOperatorServingLocked()
}

// loadOperatorServingLocked (re-)reads the operator's serving certificate
// and key when their files changed.
func (p *PKI) loadOperatorServingLocked() error {
	p.checked = p.clock.Now()
	crt, err := os.ReadFile(p.cfg.CertFile)
	if err != nil {
		return fmt.Errorf("reading --tls-cert-file: %w", err)
	}
	key, err := os.ReadFile(p.cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("reading --tls-private-key-file: %w", err)
	}
	both := append(slices.Clone(crt), key...)
	if p.serving != nil && bytes.Equal(both, p.operator) {
		return nil
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return fmt.Errorf("--tls-cert-file and --tls-private-key-file: %w", err)
	}
	p.serving, p.operator = &pair, both
	// Clients trust the chain's top: the certificates after the leaf, or
	// the leaf itself when it comes alone (self-signed).
	certs := pair.Certificate
	if len(certs) > 1 {
		certs = certs[1:]
	}
	var bundle []byte
	for _, der := range certs {
		bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der})...)
	}
	p.bundle = bundle
	return nil
}

// leaf reads the certificate and key of a leaf the CA issues, and issues
// them again when they are missing, torn, not the CA's, do not fit (fits
// false) or are due.
func (p *PKI) leaf(certName, keyName string, fits func(*x509.Certificate) bool, template func() *x509.Certificate) (certPEM, keyPEM []byte, err error) {
	certPEM, err = readIfExists(p.path(certName))
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = readIfExists(p.path(keyName))
	if err != nil {
		return nil, nil, err
	}
	if certPEM != nil && keyPEM != nil {
		c, _, perr := parsePair(certPEM, keyPEM)
		if perr == nil && c.CheckSignatureFrom(p.caCert) == nil && fits(c) && !p.due(c) {
			return certPEM, keyPEM, nil
		}
	}
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	tmpl := template()
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	now := p.clock.Now()
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-5 * time.Minute).UTC() // a client's clock a little behind still accepts it
	tmpl.NotAfter = now.Add(LeafLifetime).UTC()
	if tmpl.NotAfter.After(p.caCert.NotAfter) {
		tmpl.NotAfter = p.caCert.NotAfter
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der})
	// The key first: a certificate beside a key that is not its own is
	// taken for torn and issued again.
	err = p.write(p.path(keyName), keyPEM)
	if err == nil {
		err = p.write(p.path(certName), certPEM)
	}
	if err != nil {
		// A full disk must not keep skiffd from serving: the new leaf is
		// the CA's and valid all the same; the next start issues it again.
		logrus.WithError(err).Warnf("keeping %s in memory only", certName)
	}
	return certPEM, keyPEM, nil
}

// due says whether c is expired, not yet valid, or within RenewBefore of
// its end.
func (p *PKI) due(c *x509.Certificate) bool {
	now := p.clock.Now()
	return now.Before(c.NotBefore) || !now.Add(RenewBefore).Before(c.NotAfter)
}

// servingNames are the DNS names and addresses the serving certificate
// carries now, sorted.
func (p *PKI) servingNames() (dns []string, ips []net.IP, err error) {
	host, err := p.hostname()
	if err != nil {
		return nil, nil, fmt.Errorf("the hostname: %w", err)
	}
	nodeIPs, err := p.nodeIPs()
	if err != nil {
		return nil, nil, fmt.Errorf("the node's addresses: %w", err)
	}
	names := []string{host, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + strings.TrimSuffix(p.cfg.ClusterDomain, ".")}
	addrs := append([]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, nodeIPs...)
	if p.cfg.ServiceIP != nil {
		addrs = append(addrs, p.cfg.ServiceIP)
	}
	for _, s := range p.cfg.SANs {
		if ip := net.ParseIP(s); ip != nil {
			addrs = append(addrs, ip)
		} else if s != "" {
			names = append(names, s)
		}
	}
	return normalNames(names), normalIPs(addrs), nil
}

func normalNames(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.ToLower(n))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func normalIPs(ips []net.IP) []net.IP {
	seen := map[string]bool{}
	var out []net.IP
	for _, ip := range ips {
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		if !seen[ip.String()] {
			seen[ip.String()] = true
			out = append(out, ip)
		}
	}
	slices.SortFunc(out, func(a, b net.IP) int { return bytes.Compare(a.To16(), b.To16()) })
	return out
}

// sameNames says whether c carries exactly these names and addresses.
func sameNames(c *x509.Certificate, dns []string, ips []net.IP) bool {
	return slices.Equal(normalNames(c.DNSNames), dns) &&
		slices.EqualFunc(normalIPs(c.IPAddresses), ips, func(a, b net.IP) bool { return a.Equal(b) })
}

// nodeIPs are the addresses of the node's interfaces, link-local ones
// left out (they name no node from elsewhere).
func nodeIPs() ([]net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLinkLocalUnicast() || n.IP.IsLinkLocalMulticast() {
			continue
		}
		ips = append(ips, n.IP)
	}
	return ips, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: c.Raw})
}

// parsePair parses a certificate and its key and checks that they belong
// together.
func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, nil, err
	}
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("the key cannot sign")
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(certs[0].PublicKey) {
		return nil, nil, errors.New("the key is not the certificate's")
	}
	return certs[0], signer, nil
}

// readIfExists reads a file; nil, nil when it does not exist.
func readIfExists(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}

// writeFileAtomic writes data to path 0600, whole or not at all: a
// temporary file beside it, synced, renamed over it, the directory synced.
func writeFileAtomic(path string, data []byte) error {
	return WriteFileAtomic(path, data, 0o600)
}

// WriteFileAtomic writes data to path with mode perm, whole or not at all:
// a temporary file beside it, synced, then renamed over it and the
// directory synced. A crash leaves the old file or the new one.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
