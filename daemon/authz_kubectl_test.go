//go:build integration

package daemon_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// userCert writes a client certificate for cn in the groups orgs, signed
// by the CA in caDir (ca.crt, ca.key), and returns its files.
func userCert(t *testing.T, caDir, cn string, orgs ...string) (certFile, keyFile string) {
	t.Helper()
	ca, err := tls.LoadX509KeyPair(filepath.Join(caDir, "ca.crt"), filepath.Join(caDir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, cn+".crt"), filepath.Join(dir, cn+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// kubectlWith runs kubectl against skiffd's HTTPS listener, trusting its
// CA, with the credential flags given (a --token, or --client-certificate
// and --client-key); no kubeconfig.
func (s *skiffd) kubectlWith(t *testing.T, creds []string, args ...string) (string, error) {
	t.Helper()
	caFile := filepath.Join(s.dataDir, "kubectl-ca.crt")
	if err := os.WriteFile(caFile, s.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--kubeconfig", os.DevNull, "--server", s.url(""), "--certificate-authority", caFile,
		"--cache-dir", filepath.Join(t.TempDir(), "cache")}
	out, err := exec.Command("kubectl", append(append(base, creds...), args...)...).CombinedOutput()
	return string(out), err
}

// TestRBACKubectl is what a user of kubectl sees: a user certificate
// signed by skiffd's CA and a token-file user without rights are refused
// with kube's message; auth whoami, can-i (before and after a
// RoleBinding, --list, --as) and the escalation refusal read as on a
// cluster; a certificate of another CA is Unauthorized.
func TestRBACKubectl(t *testing.T) {
	s := newAuthSkiffd(t)
	carolCert, carolKey := userCert(t, filepath.Join(s.dataDir, "pki"), "carol", "dev")
	carol := []string{"--client-certificate", carolCert, "--client-key", carolKey}
	alice := []string{"--token", aliceToken}
	run := func(creds []string, args ...string) string {
		t.Helper()
		out, err := s.kubectlWith(t, creds, args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return out
	}
	canI := func(creds []string, args ...string) string {
		t.Helper()
		out, _ := s.kubectlWith(t, creds, append([]string{"auth", "can-i"}, args...)...)
		// The answer is the last line (a warning may come before it).
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}

	out, err := s.kubectlWith(t, carol, "get", "pods")
	if want := `Error from server (Forbidden): pods is forbidden: User "carol" cannot list resource "pods" in API group "" in the namespace "default"`; err == nil || !strings.Contains(out, want) {
		t.Errorf("carol lists pods: %v\n%s\nwant %s", err, out, want)
	}
	who := run(carol, "auth", "whoami")
	if !strings.Contains(who, "carol") || !strings.Contains(who, "[dev system:authenticated]") {
		t.Errorf("kubectl auth whoami as carol:\n%s", who)
	}
	if got := canI(alice, "create", "jobs"); got != "no" {
		t.Errorf("alice can-i create jobs before the binding: %q", got)
	}

	// The admin (the written kubeconfig) makes alice admin of default.
	s.kubectl(t, "create", "rolebinding", "alice-admin", "--clusterrole=admin", "--user=alice")
	waitFor(t, 30*time.Second, "alice may create jobs", func() (bool, error) {
		return canI(alice, "create", "jobs") == "yes", nil
	})
	if got := canI(alice, "create", "jobs", "-n", "kube-system"); got != "no" {
		t.Errorf("alice can-i in kube-system: %q", got)
	}
	if got := s.kubectl(t, "auth", "can-i", "delete", "jobs", "--as", "alice"); strings.TrimSpace(got) != "yes" {
		t.Errorf("can-i --as alice: %q", got)
	}
	if got, _ := s.kubectlWith(t, alice, "auth", "can-i", "get", "pods", "--as", "carol"); !strings.Contains(got, `users "carol" is forbidden: User "alice" cannot impersonate resource "users"`) {
		t.Errorf("alice --as carol: %q", got)
	}
	list := run(alice, "auth", "can-i", "--list")
	for _, want := range []string{"jobs.batch", "rolebindings.rbac.authorization.k8s.io", "[/version]"} {
		if !strings.Contains(list, want) {
			t.Errorf("can-i --list lacks %s:\n%s", want, list)
		}
	}
	out, err = s.kubectlWith(t, alice, "create", "role", "node-reader", "--verb=get", "--resource=nodes")
	want := `Error from server (Forbidden): roles.rbac.authorization.k8s.io "node-reader" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}`
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("alice escalating: %v\n%s\nwant %s", err, out, want)
	}
	run(alice, "create", "role", "pod-reader", "--verb=get,list", "--resource=pods")
	run(alice, "create", "rolebinding", "carol-reads", "--role=pod-reader", "--group=dev")
	waitFor(t, 30*time.Second, "carol may list pods", func() (bool, error) {
		_, err := s.kubectlWith(t, carol, "get", "pods")
		return err == nil, nil
	})
	wide := s.kubectl(t, "get", "rolebindings", "-o", "wide")
	for _, want := range []string{"ClusterRole/admin", "alice", "Role/pod-reader", "dev"} {
		if !strings.Contains(wide, want) {
			t.Errorf("get rolebindings -o wide lacks %s:\n%s", want, wide)
		}
	}
	roles := s.kubectl(t, "get", "clusterroles")
	for _, want := range []string{"cluster-admin", "system:basic-user", "system:public-info-viewer", "view"} {
		if !strings.Contains(roles, want) {
			t.Errorf("get clusterroles lacks %s:\n%s", want, roles)
		}
	}

	// apply, client-side (validated against the OpenAPI documents) and
	// server-side, and discovery as kubectl lists it.
	manifest := `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widget-reader
  labels: {rbac.authorization.k8s.io/aggregate-to-view: "true"}
rules:
- {apiGroups: [example.com], resources: [widgets], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: dev-view, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: dev}
`
	for _, mode := range [][]string{{"apply", "-f", "-"}, {"apply", "--server-side", "-f", "-"}} {
		cmd := s.kubectlCmd("", mode...)
		cmd.Stdin = strings.NewReader(manifest)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", mode, err, out)
		}
	}
	// NOTE: kubectl auth can-i sends a resource discovery does not know
	// as it is written ("widgets.example.com" in the core group), so the
	// check of a custom resource is client-go's.
	asCarol := s.clientAs(adminToken, "carol", "dev")
	waitFor(t, 30*time.Second, "view gathers widget-reader, carol may list widgets", func() (bool, error) {
		return canIClientGo(t, asCarol, "list", "example.com", "widgets", "default"), nil
	})
	resources := s.kubectl(t, "api-resources", "--api-group=rbac.authorization.k8s.io")
	for _, want := range []string{"clusterrolebindings", "clusterroles", "rolebindings", "roles"} {
		if !strings.Contains(resources, want) {
			t.Errorf("api-resources lacks %s:\n%s", want, resources)
		}
	}

	// A certificate of another CA is no one: 401, not a failed handshake.
	otherCA := t.TempDir()
	writeSelfSignedCA(t, otherCA)
	malloryCert, malloryKey := userCert(t, otherCA, "system:admin", "system:masters")
	out, err = s.kubectlWith(t, []string{"--client-certificate", malloryCert, "--client-key", malloryKey}, "get", "pods")
	if err == nil || !strings.Contains(out, "error: You must be logged in to the server") {
		t.Errorf("a certificate of another CA: %v\n%s", err, out)
	}
}

// writeSelfSignedCA writes a CA (ca.crt, ca.key) into dir.
func writeSelfSignedCA(t *testing.T, dir string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
}
