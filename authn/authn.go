package authn

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// The groups kube-apiserver gives every user after authentication.
const (
	// GroupAuthenticated is every user that presented valid credentials.
	GroupAuthenticated = "system:authenticated"
	// GroupUnauthenticated is the anonymous user's group.
	GroupUnauthenticated = "system:unauthenticated"
	// GroupMasters is the group kube-apiserver lets do anything.
	GroupMasters = "system:masters"
	// UserAnonymous is who sent a request without credentials.
	UserAnonymous = "system:anonymous"
)

// TokenAuthenticator decides on a bearer token. false with a nil error
// means "not mine" (the chain tries the next); an error means the token was
// presented to its issuer and is invalid (expired, forged, wrong audience):
// the request is refused with 401.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error)
}

// errInvalidToken is kube's answer to a token no authenticator claims.
var errInvalidToken = errors.New("invalid bearer token")

// Config is what the Authenticator checks credentials against.
type Config struct {
	// ClientCAs returns the pool client certificates must chain to; nil
	// (or a nil pool) = client certificates authenticate no one. A
	// function, so that a renewed pool is used without a restart.
	ClientCAs func() *x509.CertPool
	// Tokens are tried in order on a bearer token: --token-auth-file's,
	// then the ServiceAccount tokens'.
	Tokens []TokenAuthenticator
}

// Authenticator authenticates requests. It is safe for concurrent use.
type Authenticator struct {
	cfg Config
}

// New returns the authenticator of cfg.
func New(cfg Config) *Authenticator { return &Authenticator{cfg: cfg} }

// AuthenticateRequest returns the user r's credentials name, with
// system:authenticated added. ok is false with a nil error when r carries
// no credentials at all (the caller decides about anonymous access); an
// error means credentials were presented and none was valid (401).
// NOTE: as kube's union authenticator, a certificate that fails does not
// stop a valid token from authenticating, and the first success wins.
func (a *Authenticator) AuthenticateRequest(r *http.Request) (user authenticationv1.UserInfo, ok bool, err error) {
	var errs []error
	if a.cfg.ClientCAs != nil {
		u, ok, err := VerifyClientCertificate(r, a.cfg.ClientCAs())
		if ok {
			return withAuthenticated(u), true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if token, found := bearerToken(r); found {
		u, ok, err := a.AuthenticateToken(r.Context(), token)
		if ok {
			return u, true, nil
		}
		if err == nil {
			// NOTE: kube's bearer token authenticator: a token no one
			// claims is invalid, not absent.
			err = errInvalidToken
		}
		errs = append(errs, err)
	}
	return authenticationv1.UserInfo{}, false, errors.Join(errs...)
}

// AuthenticateToken runs the token chain on token (what TokenReview asks),
// adding system:authenticated to the user it finds. ok is false with a nil
// error when no authenticator claims the token.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	var errs []error
	for _, t := range a.cfg.Tokens {
		u, ok, err := t.AuthenticateToken(ctx, token)
		if ok {
			return withAuthenticated(u), true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return authenticationv1.UserInfo{}, false, errors.Join(errs...)
}

// bearerToken is the token of an "Authorization: Bearer <token>" header.
// found is false without such a header or with an empty token, which kube
// treats as no credentials.
func bearerToken(r *http.Request) (string, bool) {
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, _ := strings.Cut(auth, " ")
	if !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	// NOTE: kube takes the second space-separated part: "Bearer  x" (two
	// spaces) is an empty token.
	token, _, _ = strings.Cut(token, " ")
	return token, token != ""
}

// withAuthenticated adds system:authenticated to the user's groups, as
// kube-apiserver does for every authenticated user not anonymous.
func withAuthenticated(u authenticationv1.UserInfo) authenticationv1.UserInfo {
	if u.Username == UserAnonymous || slices.Contains(u.Groups, GroupAuthenticated) {
		return u
	}
	u.Groups = append(slices.Clip(u.Groups), GroupAuthenticated)
	return u
}

// Anonymous is the user kube-apiserver makes of a request without
// credentials.
func Anonymous() authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: UserAnonymous, Groups: []string{GroupUnauthenticated}}
}
