package api

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"

	"github.com/skiff-sh/skiff/authn"
	"github.com/skiff-sh/skiff/db"
)

// issue makes a certificate for subject signed by parent (self-signed
// when parent is nil) with the given usage, and returns it as a
// tls.Certificate with its parsed leaf.
func issue(t *testing.T, subject pkix.Name, parent *tls.Certificate, isCA bool, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: isCA, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	signer, signerKey := tmpl, any(key)
	if parent != nil {
		signer, signerKey = parent.Leaf, parent.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// TestClientCertificates serves the API over TLS asking for client
// certificates, as skiffd's listener does: a certificate of the client CA
// names the user (CN) and its groups (O); one of another CA is a 401, not
// a failed handshake.
func TestClientCertificates(t *testing.T) {
	ca := issue(t, pkix.Name{CommonName: "skiff-ca"}, nil, true, x509.ExtKeyUsageAny)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h := New(Config{Store: store, NodeName: "n", Version: version.Info{GitVersion: "v1.34.0"},
		Authenticator: authn.New(authn.Config{ClientCAs: func() *x509.CertPool { return pool }})})
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert,
		Certificates: []tls.Certificate{issue(t, pkix.Name{CommonName: "localhost"}, &ca, false, x509.ExtKeyUsageServerAuth)}}
	srv.StartTLS()
	defer srv.Close()

	admin := issue(t, pkix.Name{CommonName: "system:admin", Organization: []string{"system:masters"}}, &ca, false, x509.ExtKeyUsageClientAuth)
	carol := issue(t, pkix.Name{CommonName: "carol", Organization: []string{"dev"}}, &ca, false, x509.ExtKeyUsageClientAuth)
	otherCA := issue(t, pkix.Name{CommonName: "other-ca"}, nil, true, x509.ExtKeyUsageAny)
	mallory := issue(t, pkix.Name{CommonName: "system:admin", Organization: []string{"system:masters"}}, &otherCA, false, x509.ExtKeyUsageClientAuth)
	serverUsage := issue(t, pkix.Name{CommonName: "system:admin", Organization: []string{"system:masters"}}, &ca, false, x509.ExtKeyUsageServerAuth)

	tests := map[string]struct {
		cert     *tls.Certificate
		wantCode int
		wantBody string
	}{
		"admin":                  {cert: &admin, wantCode: 200},
		"no certificate":         {wantCode: 401},
		"a user without rights":  {cert: &carol, wantCode: 403, wantBody: `User \"carol\" cannot list resource \"nodes\"`},
		"another CA":             {cert: &mallory, wantCode: 401},
		"a server's certificate": {cert: &serverUsage, wantCode: 401},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := &tls.Config{RootCAs: pool}
			if tc.cert != nil {
				cfg.Certificates = []tls.Certificate{*tc.cert}
			}
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
			resp, err := c.Get(srv.URL + "/api/v1/nodes")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || (tc.wantBody != "" && !strings.Contains(string(body), tc.wantBody)) {
				t.Errorf("GET /api/v1/nodes = %d %s; want %d with %s", resp.StatusCode, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}
