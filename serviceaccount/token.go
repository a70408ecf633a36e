// Package serviceaccount issues and verifies ServiceAccount tokens: JWTs
// signed ES256 or RS256 (by the key's type, as kube-apiserver signs them) carrying the claims kube-apiserver puts in them (iss, sub, aud, exp,
// iat, nbf, jti and the private kubernetes.io claims naming the namespace,
// the ServiceAccount and the object the token is bound to), and
// authenticates requests that present one (Authenticator).
//
// It is a leaf: it knows Kubernetes' types and go-jose, never the store;
// the objects a token names are looked up through the Getter its user
// supplies.
package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// DefaultIssuer is the iss of skiff's tokens unless configured, k3s' default.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// WarnOnlyExpirationSeconds is the lifetime kube-apiserver's ServiceAccount
// admission asks for the token of a pod's kube-api-access volume: a token
// requested for a pod with exactly this lifetime and the API's audiences
// stays valid for ExtendedExpiration, and only warns past it.
const WarnOnlyExpirationSeconds = 3607

// ExtendedExpiration is how long a warn-only token is really valid
// (kube-apiserver's --service-account-extend-token-expiration, on by
// default: a year).
const ExtendedExpiration = 365 * 24 * time.Hour

// Claims is what a token says: the registered claims and kube's private
// ones.
type Claims struct {
	jwt.Claims
	Kubernetes Kubernetes `json:"kubernetes.io,omitempty"`
}

// Kubernetes are the private claims under "kubernetes.io".
type Kubernetes struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount Ref              `json:"serviceaccount,omitempty"`
	Pod            *Ref             `json:"pod,omitempty"`
	Secret         *Ref             `json:"secret,omitempty"`
	Node           *Ref             `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

// Ref names an object a token is bound to.
type Ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Binding is what a token is issued for: the ServiceAccount and at most one
// of a Pod (with the Node it runs on, if known) or a Secret.
type Binding struct {
	ServiceAccount *corev1.ServiceAccount
	Pod            *corev1.Pod
	Node           *corev1.Node
	Secret         *corev1.Secret
}

// Issuer signs tokens with a private key.
type Issuer struct {
	issuer string
	signer jose.Signer
	now    func() time.Time
}

// NewIssuer returns an Issuer that signs with key and names issuer as the
// tokens' iss: ES256 with an ECDSA P-256 key, RS256 with an RSA key.
func NewIssuer(issuer string, key crypto.Signer) (*Issuer, error) {
	alg, err := algorithm(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := keyID(key.Public())
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid))
	if err != nil {
		return nil, fmt.Errorf("making token signer: %w", err)
	}
	return &Issuer{issuer: issuer, signer: signer, now: time.Now}, nil
}

// algorithm is the JWS algorithm of tokens signed with the private half of
// pub (kube-apiserver's: RS256 for RSA, ES256/384/512 by ECDSA curve; skiff
// makes P-256 keys).
func algorithm(pub crypto.PublicKey) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
	}
	return "", fmt.Errorf("a ServiceAccount token key must be RSA or ECDSA (P-256, P-384, P-521), not %T", pub)
}

// keyID is kube's key id of a public key: the unpadded base64url SHA-256
// of its PKIX DER, so a verifier holding several keys finds the one.
func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encoding public key: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Issue signs a token for b, valid from now for lifetime, for audiences;
// warnAfter, if not zero, is when its use should start to warn (the claim
// kube writes into extended tokens). It returns the token and its claims.
func (is *Issuer) Issue(b Binding, audiences []string, lifetime, warnAfter time.Duration) (string, *Claims, error) {
	if b.Secret != nil && (b.Pod != nil || b.Node != nil) {
		return "", nil, errors.New("a token is bound to a secret or to a pod, not both")
	}
	sa := b.ServiceAccount
	now := is.now()
	c := &Claims{
		Claims: jwt.Claims{
			Issuer:    is.issuer,
			Subject:   Username(sa.Namespace, sa.Name),
			Audience:  jwt.Audience(audiences),
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now),
			Expiry:    jwt.NewNumericDate(now.Add(lifetime)),
			ID:        string(uuid.NewUUID()),
		},
		Kubernetes: Kubernetes{
			Namespace:      sa.Namespace,
			ServiceAccount: Ref{Name: sa.Name, UID: string(sa.UID)},
		},
	}
	switch {
	case b.Pod != nil:
		c.Kubernetes.Pod = &Ref{Name: b.Pod.Name, UID: string(b.Pod.UID)}
		if b.Node != nil {
			c.Kubernetes.Node = &Ref{Name: b.Node.Name, UID: string(b.Node.UID)}
		}
	case b.Secret != nil:
		c.Kubernetes.Secret = &Ref{Name: b.Secret.Name, UID: string(b.Secret.UID)}
	}
	if warnAfter != 0 {
		c.Kubernetes.WarnAfter = jwt.NewNumericDate(now.Add(warnAfter))
	}
	tok, err := jwt.Signed(is.signer).Claims(c).Serialize()
	if err != nil {
		return "", nil, fmt.Errorf("signing token: %w", err)
	}
	return tok, c, nil
}

// Username is a ServiceAccount's user name:
// system:serviceaccount:<namespace>:<name>.
func Username(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}
