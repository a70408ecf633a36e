// Package authn answers who sent a request to the API, as kube-apiserver's
// authenticators do: an x509 client certificate verified against the client
// CA (CN = user, O = groups), a bearer token from a --token-auth-file or from
// any TokenAuthenticator of the chain (ServiceAccount JWTs). It is a leaf:
// it knows neither the store nor HTTP routing, only the request.
//
// NOTE: k8s.io/apiserver holds kube's own authenticators, but importing its
// request/x509 and token/tokenfile packages brings component-base's metrics
// registry and apiserver's user and authenticator types, to be converted
// back to authenticationv1.UserInfo at every request; the rules themselves
// (one x509.Verify, a CSV reader) are a few lines here.
package authn
