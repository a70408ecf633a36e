package serviceaccount

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
)

// Extra keys of a ServiceAccount token's user, as kube-apiserver sets them.
const (
	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"
)

// Groups every ServiceAccount user is in, besides its namespace's
// (system:serviceaccounts:<namespace>).
const AllServiceAccountsGroup = "system:serviceaccounts"

// Getter reads the objects a token names, as they are stored now; a
// missing one is an error (any: the token is then refused).
type Getter interface {
	ServiceAccount(namespace, name string) (*corev1.ServiceAccount, error)
	Pod(namespace, name string) (*corev1.Pod, error)
	Secret(namespace, name string) (*corev1.Secret, error)
}

// Authenticator authenticates requests bearing a ServiceAccount token of
// this issuer: the signature, the time claims, the audience, and that the
// ServiceAccount and the object the token is bound to still exist with
// the UIDs the token names (kube's "legacy" validator of bound tokens).
type Authenticator struct {
	issuer    string
	keys      map[string]verifyKey // by key ID
	algs      []jose.SignatureAlgorithm
	audiences []string
	get       Getter
	now       func() time.Time
}

// verifyKey is a public key and the algorithm of the tokens it verifies.
type verifyKey struct {
	key crypto.PublicKey
	alg jose.SignatureAlgorithm
}

// NewAuthenticator returns an Authenticator of the tokens issuer signs with
// the private half of any of keys (RSA or ECDSA), accepted for any of
// audiences.
func NewAuthenticator(issuer string, keys []crypto.PublicKey, audiences []string, get Getter) (*Authenticator, error) {
	a := &Authenticator{issuer: issuer, keys: map[string]verifyKey{}, audiences: audiences, get: get, now: time.Now}
	for _, k := range keys {
		alg, err := algorithm(k)
		if err != nil {
			return nil, err
		}
		kid, err := keyID(k)
		if err != nil {
			return nil, err
		}
		a.keys[kid] = verifyKey{key: k, alg: alg}
		if !slices.Contains(a.algs, alg) {
			a.algs = append(a.algs, alg)
		}
	}
	return a, nil
}

// AuthenticateToken is the TokenAuthenticator of the API's chain
// (authn.TokenAuthenticator): false and no error when token is not a JWT
// of this issuer (another authenticator may know it), false and the reason
// when it is one that is not valid.
func (a *Authenticator) AuthenticateToken(_ context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	c, ok, err := a.Verify(token)
	if !ok || err != nil {
		// NOTE: the chain's contract: an invalid token is not ok, with
		// the reason.
		return authenticationv1.UserInfo{}, false, err
	}
	return userInfo(c), true, nil
}

// Verify checks token and returns its claims; ok is false (and err nil)
// when it is not a JWT of this issuer.
func (a *Authenticator) Verify(token string) (c *Claims, ok bool, err error) {
	parsed, err := jwt.ParseSigned(token, a.algs)
	if err != nil {
		return nil, false, nil
	}
	var unverified jwt.Claims
	if err := parsed.UnsafeClaimsWithoutVerification(&unverified); err != nil || unverified.Issuer != a.issuer {
		return nil, false, nil
	}
	if c, err = a.verified(parsed); err != nil {
		return nil, true, err
	}
	now := a.now()
	switch err := c.Claims.ValidateWithLeeway(jwt.Expected{Time: now}, jwt.DefaultLeeway); {
	case errors.Is(err, jwt.ErrExpired):
		return nil, true, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, true, errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, true, errors.New("service account token is issued in the future")
	case err != nil:
		return nil, true, fmt.Errorf("service account token claims could not be validated: %w", err)
	}
	if !slices.ContainsFunc(a.audiences, func(aud string) bool { return c.Audience.Contains(aud) }) {
		return nil, true, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(c.Audience), a.audiences)
	}
	if c.Subject != Username(c.Kubernetes.Namespace, c.Kubernetes.ServiceAccount.Name) {
		return nil, true, errors.New("service account token claims could not be validated: the subject is not the service account")
	}
	return c, true, a.checkBindings(c, now)
}

// verified checks the token's signature with the key its header names (kid),
// or, for a token without one, with each key of its algorithm, and returns
// its claims.
func (a *Authenticator) verified(parsed *jwt.JSONWebToken) (*Claims, error) {
	bad := errors.New("invalid bearer token: the signature is not this issuer's")
	if len(parsed.Headers) != 1 {
		return nil, bad
	}
	h := parsed.Headers[0]
	candidates := []verifyKey{}
	if k, ok := a.keys[h.KeyID]; ok {
		candidates = append(candidates, k)
	} else if h.KeyID == "" {
		for _, k := range a.keys {
			candidates = append(candidates, k)
		}
	}
	for _, k := range candidates {
		if string(k.alg) != h.Algorithm {
			continue
		}
		c := &Claims{}
		if err := parsed.Claims(k.key, c); err == nil {
			return c, nil
		}
	}
	return nil, bad
}

// checkBindings is kube's validation of a bound token against the store:
// the ServiceAccount, and the Pod or Secret it is bound to, exist with the
// UIDs of the token and were not deleted (beyond the leeway).
func (a *Authenticator) checkBindings(c *Claims, now time.Time) error {
	deletedBefore := now.Add(-jwt.DefaultLeeway)
	k := c.Kubernetes
	sa, err := a.get.ServiceAccount(k.Namespace, k.ServiceAccount.Name)
	if err != nil {
		return fmt.Errorf("service account %s/%s: %w", k.Namespace, k.ServiceAccount.Name, err)
	}
	if string(sa.UID) != k.ServiceAccount.UID {
		return fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, k.ServiceAccount.UID)
	}
	if sa.DeletionTimestamp != nil && sa.DeletionTimestamp.Time.Before(deletedBefore) {
		return fmt.Errorf("service account %s/%s has been deleted", k.Namespace, k.ServiceAccount.Name)
	}
	if ref := k.Secret; ref != nil {
		s, err := a.get.Secret(k.Namespace, ref.Name)
		if err != nil || (s.DeletionTimestamp != nil && s.DeletionTimestamp.Time.Before(deletedBefore)) {
			return errors.New("service account token has been invalidated")
		}
		if string(s.UID) != ref.UID {
			return fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", s.UID, ref.UID)
		}
	}
	if ref := k.Pod; ref != nil {
		p, err := a.get.Pod(k.Namespace, ref.Name)
		if err != nil || (p.DeletionTimestamp != nil && p.DeletionTimestamp.Time.Before(deletedBefore)) {
			return errors.New("service account token has been invalidated")
		}
		if string(p.UID) != ref.UID {
			return fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", p.UID, ref.UID)
		}
	}
	return nil
}

// userInfo is the user of a valid token, as kube-apiserver makes it.
func userInfo(c *Claims) authenticationv1.UserInfo {
	k := c.Kubernetes
	u := authenticationv1.UserInfo{
		Username: Username(k.Namespace, k.ServiceAccount.Name),
		UID:      k.ServiceAccount.UID,
		Groups:   []string{AllServiceAccountsGroup, AllServiceAccountsGroup + ":" + k.Namespace},
		Extra:    map[string]authenticationv1.ExtraValue{},
	}
	if k.Pod != nil {
		u.Extra[ExtraPodName] = authenticationv1.ExtraValue{k.Pod.Name}
		u.Extra[ExtraPodUID] = authenticationv1.ExtraValue{k.Pod.UID}
		if k.Node != nil {
			u.Extra[ExtraNodeName] = authenticationv1.ExtraValue{k.Node.Name}
			if k.Node.UID != "" {
				u.Extra[ExtraNodeUID] = authenticationv1.ExtraValue{k.Node.UID}
			}
		}
	}
	if c.ID != "" {
		u.Extra[ExtraCredentialID] = authenticationv1.ExtraValue{"JTI=" + c.ID}
	}
	return u
}
