package authn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// testCA is a CA that signs test certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert: cert, key: key}
}

func (ca testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// sign makes a leaf certificate for subject with the given usage, valid
// from notBefore to notAfter.
func (ca testCA) sign(t *testing.T, subject pkix.Name, usage x509.ExtKeyUsage, notBefore, notAfter time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: subject, NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestVerifyClientCertificate(t *testing.T) {
	ca, other := newTestCA(t, "skiff-ca"), newTestCA(t, "other-ca")
	now := time.Now()
	alice := pkix.Name{CommonName: "alice", Organization: []string{"dev", "ops"}}
	tests := map[string]struct {
		cert    *x509.Certificate // nil = no certificate
		want    authenticationv1.UserInfo
		wantOK  bool
		wantErr string
	}{
		"no certificate": {},
		"CN and O":       {cert: ca.sign(t, alice, x509.ExtKeyUsageClientAuth, now.Add(-time.Minute), now.Add(time.Hour)), wantOK: true, want: authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev", "ops"}}},
		"another CA":     {cert: other.sign(t, alice, x509.ExtKeyUsageClientAuth, now.Add(-time.Minute), now.Add(time.Hour)), wantErr: "certificate signed by unknown authority"},
		"expired":        {cert: ca.sign(t, alice, x509.ExtKeyUsageClientAuth, now.Add(-2*time.Hour), now.Add(-time.Hour)), wantErr: "expired"},
		"not yet valid":  {cert: ca.sign(t, alice, x509.ExtKeyUsageClientAuth, now.Add(time.Hour), now.Add(2*time.Hour)), wantErr: "not yet valid"},
		"server usage":   {cert: ca.sign(t, alice, x509.ExtKeyUsageServerAuth, now.Add(-time.Minute), now.Add(time.Hour)), wantErr: "incompatible key usage"},
		"no CN":          {cert: ca.sign(t, pkix.Name{Organization: []string{"dev"}}, x509.ExtKeyUsageClientAuth, now.Add(-time.Minute), now.Add(time.Hour))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			r.TLS = &tls.ConnectionState{}
			if tc.cert != nil {
				r.TLS.PeerCertificates = []*x509.Certificate{tc.cert}
			}
			got, ok, err := VerifyClientCertificate(r, ca.pool())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.wantOK {
				t.Fatalf("ok, err = %v, %v; want %v, nil", ok, err, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("user (-want,+got):\n%s", diff)
			}
		})
	}
}

const tokenCSV = `s3cret,alice,1001,"dev,ops"
,ghost,1
plain,bob,1002
s3cret2,carol,1003,
plain,bobby,1004
`

func TestTokenFile(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader(tokenCSV))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		token  string
		want   authenticationv1.UserInfo
		wantOK bool
	}{
		"with groups":         {token: "s3cret", wantOK: true, want: authenticationv1.UserInfo{Username: "alice", UID: "1001", Groups: []string{"dev", "ops"}}},
		"later record wins":   {token: "plain", wantOK: true, want: authenticationv1.UserInfo{Username: "bobby", UID: "1004"}},
		"empty group column":  {token: "s3cret2", wantOK: true, want: authenticationv1.UserInfo{Username: "carol", UID: "1003", Groups: []string{""}}},
		"prefix of a token":   {token: "s3cre"},
		"token with a suffix": {token: "s3cret2x"},
		"empty token skipped": {token: ""},
		"unknown":             {token: "nope"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok, err := tf.AuthenticateToken(context.Background(), tc.token)
			if err != nil || ok != tc.wantOK {
				t.Fatalf("ok, err = %v, %v; want %v, nil", ok, err, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("user (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestParseTokenFileErrors(t *testing.T) {
	for name, in := range map[string]string{
		"two columns": "tok,user\n",
		"bad quoting": "tok,\"user,1\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseTokenFile(strings.NewReader(in)); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// fakeTokens is a TokenAuthenticator answering from a map; tokens in
// invalid are presented-but-invalid.
type fakeTokens struct {
	users   map[string]string
	invalid map[string]string
}

func (f fakeTokens) AuthenticateToken(_ context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	if msg, ok := f.invalid[token]; ok {
		return authenticationv1.UserInfo{}, false, errors.New(msg)
	}
	if name, ok := f.users[token]; ok {
		return authenticationv1.UserInfo{Username: name}, true, nil
	}
	return authenticationv1.UserInfo{}, false, nil
}

func TestAuthenticateRequest(t *testing.T) {
	ca := newTestCA(t, "skiff-ca")
	now := time.Now()
	good := ca.sign(t, pkix.Name{CommonName: "alice", Organization: []string{"dev"}}, x509.ExtKeyUsageClientAuth, now.Add(-time.Minute), now.Add(time.Hour))
	foreign := newTestCA(t, "other").sign(t, pkix.Name{CommonName: "mallory"}, x509.ExtKeyUsageClientAuth, now.Add(-time.Minute), now.Add(time.Hour))
	a := New(Config{
		ClientCAs: ca.pool,
		Tokens: []TokenAuthenticator{
			fakeTokens{users: map[string]string{"file-token": "bob"}},
			fakeTokens{users: map[string]string{"sa-token": "system:serviceaccount:default:default"},
				invalid: map[string]string{"expired": "token has expired", "wrong-aud": "token audiences is invalid"}},
		},
	})
	tests := map[string]struct {
		cert    *x509.Certificate
		header  string
		want    authenticationv1.UserInfo
		wantOK  bool
		wantErr string
	}{
		"nothing":                    {},
		"basic auth is not a token":  {header: "Basic Ym9iOnB3"},
		"empty bearer":               {header: "Bearer "},
		"certificate":                {cert: good, wantOK: true, want: authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev", GroupAuthenticated}}},
		"first token authenticator":  {header: "Bearer file-token", wantOK: true, want: authenticationv1.UserInfo{Username: "bob", Groups: []string{GroupAuthenticated}}},
		"second token authenticator": {header: "bearer sa-token", wantOK: true, want: authenticationv1.UserInfo{Username: "system:serviceaccount:default:default", Groups: []string{GroupAuthenticated}}},
		"expired token":              {header: "Bearer expired", wantErr: "token has expired"},
		"wrong audience":             {header: "Bearer wrong-aud", wantErr: "audiences"},
		"unknown token":              {header: "Bearer guess", wantErr: "invalid bearer token"},
		"foreign certificate":        {cert: foreign, wantErr: "unknown authority"},
		"foreign certificate, good token": {cert: foreign, header: "Bearer file-token", wantOK: true,
			want: authenticationv1.UserInfo{Username: "bob", Groups: []string{GroupAuthenticated}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			if tc.cert != nil {
				r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tc.cert}}
			}
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			got, ok, err := a.AuthenticateRequest(r)
			if tc.wantErr != "" {
				if ok || err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ok, err = %v, %v; want an error with %q", ok, err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.wantOK {
				t.Fatalf("ok, err = %v, %v; want %v, nil", ok, err, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("user (-want,+got):\n%s", diff)
			}
		})
	}
}
