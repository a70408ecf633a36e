package authn

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// VerifyClientCertificate authenticates the client certificate of r's TLS
// connection against pool: a chain to pool made for client
// authentication, valid now, names the user by its subject's CommonName
// and its groups by its Organizations. ok is false with a nil error when r
// came without a certificate (or over no TLS, or with no pool); an error
// when the certificate does not verify (another CA, expired, a server
// certificate) — a 401, never a handshake failure.
func VerifyClientCertificate(r *http.Request, pool *x509.CertPool) (authenticationv1.UserInfo, bool, error) {
	if pool == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return authenticationv1.UserInfo{}, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	intermediates := x509.NewCertPool()
	for _, c := range r.TLS.PeerCertificates[1:] {
		intermediates.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots:         pool,
		Intermediates: intermediates,
		CurrentTime:   time.Now(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return authenticationv1.UserInfo{}, false, fmt.Errorf("verifying certificate %s: %w", describeCertificate(leaf), err)
	}
	// NOTE: kube's CommonNameUserConversion: a certificate without a CN
	// names no one, so the next authenticator decides.
	if leaf.Subject.CommonName == "" {
		return authenticationv1.UserInfo{}, false, nil
	}
	return authenticationv1.UserInfo{Username: leaf.Subject.CommonName, Groups: leaf.Subject.Organization}, true, nil
}

// describeCertificate names a certificate in an error as kube's x509
// authenticator does: its subject, issuer and validity.
func describeCertificate(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%d, SKID=%X, AKID=%X for subject %q issued by %q valid from %s to %s",
		c.SerialNumber, c.SubjectKeyId, c.AuthorityKeyId, c.Subject.String(), c.Issuer.String(),
		c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
}
