package pki

import (
	"bytes"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	clocktesting "k8s.io/utils/clock/testing"
)

// env is a node whose clock, addresses and hostname a test sets.
type env struct {
	clock *clocktesting.FakePassiveClock
	ips   []net.IP
	host  string
}

func newEnv() *env {
	return &env{
		clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		ips:   []net.IP{net.ParseIP("192.0.2.10")},
		host:  "node-a",
	}
}

func (e *env) load(t *testing.T, cfg Config) *PKI {
	t.Helper()
	p, err := load(cfg, e.clock, func() ([]net.IP, error) { return slices.Clone(e.ips), nil },
		func() (string, error) { return e.host, nil })
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return p
}

// serving returns the leaf certificate a handshake would get now.
func serving(t *testing.T, p *PKI) *x509.Certificate {
	t.Helper()
	c, err := p.TLSConfig().GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf
}

func caPool(t *testing.T, p *PKI) *x509.CertPool {
	t.Helper()
	pool, err := certutil.NewPoolFromBytes(p.CABundle())
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestServingCertificateNames(t *testing.T) {
	e := newEnv()
	p := e.load(t, Config{Dir: t.TempDir(), SANs: []string{"skiff.example.com", "203.0.113.7"},
		ServiceIP: net.ParseIP("10.43.0.1"), ClusterDomain: "corp.local"})
	leaf := serving(t, p)
	for _, name := range []string{"node-a", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.corp.local", "skiff.example.com", "127.0.0.1", "::1", "192.0.2.10", "10.43.0.1", "203.0.113.7"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: caPool(t, p), CurrentTime: e.clock.Now()}); err != nil {
			t.Errorf("serving certificate for %q: %v", name, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "other.example.com", Roots: caPool(t, p), CurrentTime: e.clock.Now()}); err == nil {
		t.Error("the serving certificate is valid for a name it was not given")
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("ext key usage %v, want server auth", leaf.ExtKeyUsage)
	}
}

func TestAdminCredentials(t *testing.T) {
	e := newEnv()
	p := e.load(t, Config{Dir: t.TempDir()})
	certPEM, keyPEM := p.AdminCredentials()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject.CommonName != "system:admin" || !slices.Equal(c.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("admin subject %v", c.Subject)
	}
	_, err = c.Verify(x509.VerifyOptions{Roots: p.ClientCAs(), CurrentTime: e.clock.Now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Errorf("the admin certificate does not verify as a client of the client CAs: %v", err)
	}
	if k := p.ServiceAccountKey(); k.Curve != elliptic.P256() {
		t.Errorf("service account key on the curve %s, want P-256", k.Curve.Params().Name)
	}
	if keys := p.ServiceAccountPublicKeys(); len(keys) != 1 || !p.ServiceAccountKey().PublicKey.Equal(keys[0]) {
		t.Errorf("a first start verifies tokens with %d keys, want the signing key's alone", len(keys))
	}
}

// TestEarlierRSAServiceAccountKey: the RSA key an earlier skiffd signed
// tokens with still verifies them; a new key signs; a torn one is left out.
func TestEarlierRSAServiceAccountKey(t *testing.T) {
	e := newEnv()
	dir := t.TempDir()
	old, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	data, err := keyutil.MarshalPrivateKeyToPEM(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, saRSAKeyFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	p := e.load(t, Config{Dir: dir})
	keys := p.ServiceAccountPublicKeys()
	if len(keys) != 2 || !p.ServiceAccountKey().PublicKey.Equal(keys[0]) || !old.PublicKey.Equal(keys[1]) {
		t.Errorf("verification keys %v, want the new signing key's and the earlier RSA one", keys)
	}
	if after, err := os.ReadFile(filepath.Join(dir, saRSAKeyFile)); err != nil || !bytes.Equal(after, data) {
		t.Errorf("the earlier key's file changed (%v)", err)
	}
	if err := os.WriteFile(filepath.Join(dir, saRSAKeyFile), []byte("-----BEGIN RSA PRIVATE KEY-----\nMII"), 0o600); err != nil {
		t.Fatal(err)
	}
	if keys := e.load(t, Config{Dir: dir}).ServiceAccountPublicKeys(); len(keys) != 1 {
		t.Errorf("with a torn earlier key, %d verification keys, want 1", len(keys))
	}
}

func TestReusedAcrossRestarts(t *testing.T) {
	e := newEnv()
	dir := t.TempDir()
	first := e.load(t, Config{Dir: dir})
	firstServing := serving(t, first)
	adminCert, _ := first.AdminCredentials()
	e.clock.SetTime(e.clock.Now().Add(30 * 24 * time.Hour))
	second := e.load(t, Config{Dir: dir})
	if !bytes.Equal(first.CABundle(), second.CABundle()) {
		t.Error("a restart made a new CA")
	}
	if !serving(t, second).Equal(firstServing) {
		t.Error("a restart re-issued a serving certificate that was not due")
	}
	if again, _ := second.AdminCredentials(); !bytes.Equal(again, adminCert) {
		t.Error("a restart re-issued the admin certificate")
	}
	if !first.ServiceAccountKey().Equal(second.ServiceAccountKey()) {
		t.Error("a restart made a new ServiceAccount key")
	}
	for _, f := range []string{caCertFile, caKeyFile, servingCertFile, servingKeyFile, adminCertFile, adminKeyFile, saKeyFile} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
}

func TestRenewedBeforeExpiryWithoutRestart(t *testing.T) {
	e := newEnv()
	dir := t.TempDir()
	p := e.load(t, Config{Dir: dir})
	old := serving(t, p)
	adminOld, _ := p.AdminCredentials()

	// Not yet due: the same certificate.
	e.clock.SetTime(old.NotAfter.Add(-RenewBefore - time.Hour))
	if !serving(t, p).Equal(old) {
		t.Fatal("renewed before it was due")
	}
	// Due: a handshake after the next check gets a new one, which the
	// same CA signed and which outlives the old.
	e.clock.SetTime(old.NotAfter.Add(-RenewBefore + time.Hour))
	renewed := serving(t, p)
	if renewed.Equal(old) {
		t.Fatal("not renewed within RenewBefore of its end")
	}
	if !renewed.NotAfter.After(old.NotAfter) {
		t.Errorf("renewed certificate ends %v, the old one %v", renewed.NotAfter, old.NotAfter)
	}
	if _, err := renewed.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: caPool(t, p), CurrentTime: e.clock.Now()}); err != nil {
		t.Errorf("renewed certificate: %v", err)
	}
	// The renewal is on disk: a restart keeps it, and renews the admin's.
	again := e.load(t, Config{Dir: dir})
	if !serving(t, again).Equal(renewed) {
		t.Error("the renewed serving certificate was not kept")
	}
	if adminNew, _ := again.AdminCredentials(); bytes.Equal(adminNew, adminOld) {
		t.Error("a due admin certificate was not re-issued at start")
	}
	if !bytes.Equal(again.CABundle(), p.CABundle()) {
		t.Error("renewal changed the CA")
	}
}

// TestRenewedOnAFullDisk: a renewal that cannot be written is served from
// memory (a full disk must not stop skiffd serving), and made again later.
func TestRenewedOnAFullDisk(t *testing.T) {
	e := newEnv()
	p := e.load(t, Config{Dir: t.TempDir()})
	old := serving(t, p)
	p.write = func(path string, _ []byte) error { return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC} }
	e.clock.SetTime(old.NotAfter.Add(-RenewBefore + time.Hour))
	renewed := serving(t, p)
	if renewed.Equal(old) || !renewed.NotAfter.After(old.NotAfter) {
		t.Fatal("the serving certificate was not renewed when its files could not be written")
	}
	if _, err := renewed.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: caPool(t, p), CurrentTime: e.clock.Now()}); err != nil {
		t.Error(err)
	}
}

func TestReissuedWhenNamesChange(t *testing.T) {
	e := newEnv()
	dir := t.TempDir()
	p := e.load(t, Config{Dir: dir})
	old := serving(t, p)

	// A node address that came while serving, seen at the next check.
	e.ips = append(e.ips, net.ParseIP("198.51.100.4"))
	if !serving(t, p).Equal(old) {
		t.Fatal("checked again before checkInterval passed")
	}
	e.clock.SetTime(e.clock.Now().Add(checkInterval))
	withIP := serving(t, p)
	if err := withIP.VerifyHostname("198.51.100.4"); err != nil {
		t.Errorf("new node address: %v", err)
	}
	// A new --tls-san at a restart.
	p = e.load(t, Config{Dir: dir, SANs: []string{"api.example.com"}})
	if err := serving(t, p).VerifyHostname("api.example.com"); err != nil {
		t.Errorf("new --tls-san: %v", err)
	}
	// A name that went away goes from the certificate.
	e.ips = e.ips[:1]
	p = e.load(t, Config{Dir: dir})
	if err := serving(t, p).VerifyHostname("198.51.100.4"); err == nil {
		t.Error("a node address that went away is still in the certificate")
	}
}

func TestTornFilesAreMadeAgain(t *testing.T) {
	e := newEnv()
	dir := t.TempDir()
	first := e.load(t, Config{Dir: dir})

	// A half-written serving key (as a non-atomic writer would leave) and
	// a temporary file of a write cut short: the next start issues the
	// serving certificate again and removes the leftover.
	key := filepath.Join(dir, servingKeyFile)
	data, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, ".serving.key.tmp123")
	if err := os.WriteFile(leftover, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	second := e.load(t, Config{Dir: dir})
	if !bytes.Equal(first.CABundle(), second.CABundle()) {
		t.Error("a torn leaf made a new CA")
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Errorf("leftover temporary file: %v", err)
	}
	if _, err := serving(t, second).Verify(x509.VerifyOptions{DNSName: "localhost", Roots: caPool(t, second), CurrentTime: e.clock.Now()}); err != nil {
		t.Error(err)
	}

	// A first start killed between the CA's key and its certificate.
	dir = t.TempDir()
	e.load(t, Config{Dir: dir})
	if err := os.Remove(filepath.Join(dir, caCertFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, saKeyFile), []byte("-----BEGIN RSA PRIVATE KEY-----\nMII"), 0o600); err != nil {
		t.Fatal(err)
	}
	third := e.load(t, Config{Dir: dir})
	if _, err := serving(t, third).Verify(x509.VerifyOptions{DNSName: "localhost", Roots: caPool(t, third), CurrentTime: e.clock.Now()}); err != nil {
		t.Errorf("after a new CA the serving certificate is not the new CA's: %v", err)
	}
	certPEM, keyPEM := third.AdminCredentials()
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Error(err)
	}
	if third.ServiceAccountKey() == nil {
		t.Error("no ServiceAccount key after a torn one")
	}
}

func TestOperatorCertificates(t *testing.T) {
	e := newEnv()
	// The operator's PKI: another skiff PKI stands in for it.
	operator := e.load(t, Config{Dir: t.TempDir(), SANs: []string{"op.example.com"}})
	opDir := t.TempDir()
	certFile, keyFile := filepath.Join(opDir, "tls.crt"), filepath.Join(opDir, "tls.key")
	write := func(src *PKI) {
		t.Helper()
		crt, err := os.ReadFile(filepath.Join(src.cfg.Dir, servingCertFile))
		if err != nil {
			t.Fatal(err)
		}
		key, err := os.ReadFile(filepath.Join(src.cfg.Dir, servingKeyFile))
		if err != nil {
			t.Fatal(err)
		}
		// The chain after the leaf: the operator's CA.
		if err := WriteFileAtomic(certFile, append(crt, src.CABundle()...), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(keyFile, key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(operator)
	clientCA := filepath.Join(opDir, "client-ca.crt")
	if err := os.WriteFile(clientCA, operator.CABundle(), 0o600); err != nil {
		t.Fatal(err)
	}

	p := e.load(t, Config{Dir: t.TempDir(), CertFile: certFile, KeyFile: keyFile, ClientCAFile: clientCA})
	if !bytes.Equal(p.CABundle(), operator.CABundle()) {
		t.Error("CABundle is not the operator's CA")
	}
	if err := serving(t, p).VerifyHostname("op.example.com"); err != nil {
		t.Error(err)
	}
	// Client certificates of the operator's CA and of skiff's own verify.
	for name, src := range map[string]*PKI{"operator": operator, "own": p} {
		certPEM, _ := src.AdminCredentials()
		certs, err := certutil.ParseCertsPEM(certPEM)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := certs[0].Verify(x509.VerifyOptions{Roots: p.ClientCAs(), CurrentTime: e.clock.Now(),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s client certificate: %v", name, err)
		}
	}

	// The operator replaces the files: served at the next check, no restart.
	replacement := e.load(t, Config{Dir: t.TempDir(), SANs: []string{"op2.example.com"}})
	write(replacement)
	e.clock.SetTime(e.clock.Now().Add(checkInterval))
	if err := serving(t, p).VerifyHostname("op2.example.com"); err != nil {
		t.Errorf("replaced operator certificate not served: %v", err)
	}
	if !bytes.Equal(p.CABundle(), replacement.CABundle()) {
		t.Error("CABundle did not follow the replaced chain")
	}

	if _, err := Load(Config{Dir: t.TempDir(), CertFile: certFile}); err == nil {
		t.Error("a certificate file without its key was accepted")
	}
}
