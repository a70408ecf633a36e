package daemon

import (
	"crypto/x509"

	"github.com/skiff-sh/skiff/authn"
)

// newAuthenticator builds the API's authenticator: client certificates
// against clientCAs (nil = none), then the --token-auth-file tokens, then
// the ServiceAccount tokens serviceAccounts verifies.
func newAuthenticator(cfg Config, clientCAs func() *x509.CertPool, serviceAccounts authn.TokenAuthenticator) (*authn.Authenticator, error) {
	var tokens []authn.TokenAuthenticator
	if cfg.TokenAuthFile != "" {
		tf, err := authn.LoadTokenFile(cfg.TokenAuthFile)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, tf)
	}
	tokens = append(tokens, serviceAccounts)
	return authn.New(authn.Config{ClientCAs: clientCAs, Tokens: tokens}), nil
}
