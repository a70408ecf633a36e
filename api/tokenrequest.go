package api

import (
	"fmt"
	"net/http"

	"github.com/gorilla/mux"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// tokenRequestGVK is the kind the token subresource takes and returns.
var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// TokenRequests issues ServiceAccount tokens (serviceaccount.Requester).
type TokenRequests interface {
	Request(namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, []string, error)
}

// tokenSubresource is serviceaccounts/token in discovery.
func tokenSubresource() metav1.APIResource {
	return metav1.APIResource{Name: "serviceaccounts/token", Namespaced: true, Group: tokenRequestGVK.Group,
		Version: tokenRequestGVK.Version, Kind: tokenRequestGVK.Kind, Verbs: metav1.Verbs{"create"}}
}

// tokenRequestRoute registers POST .../serviceaccounts/{name}/token.
func (s *server) tokenRequestRoute(r *mux.Router) {
	rs := serviceAccountResource
	object := rs.gv.prefix() + "/namespaces/{namespace}/" + rs.plural + "/{name}"
	r.HandleFunc(object+"/token", s.methods(rs, "token", map[string]http.HandlerFunc{
		http.MethodPost: s.tokenRequest,
	}))
}

// tokenRequest serves POST .../serviceaccounts/{name}/token: 201 and the
// TokenRequest with the token in its status (kubectl create token).
func (s *server) tokenRequest(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	if s.cfg.Tokens == nil {
		writeError(w, r, apierrors.NewServiceUnavailable("this server issues no service account tokens"))
		return
	}
	opts, err := parseWriteOptions(r, createOptionsKind, "")
	var req *authenticationv1.TokenRequest
	if err == nil {
		req, err = decodeTokenRequest(w, r, opts.validation)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	out, warnings, err := s.cfg.Tokens.Request(v["namespace"], v["name"], req)
	if err != nil {
		writeError(w, r, statusFor(err, serviceAccountResource.groupResource(), v["name"]))
		return
	}
	for _, msg := range warnings {
		addWarning(w, msg)
	}
	out.SetGroupVersionKind(tokenRequestGVK)
	writeJSON(w, r, http.StatusCreated, out)
}

// decodeTokenRequest decodes the request body (JSON, YAML or protobuf) as
// an authentication.k8s.io/v1 TokenRequest.
func decodeTokenRequest(w http.ResponseWriter, r *http.Request, directive fieldValidation) (*authenticationv1.TokenRequest, error) {
	req := &authenticationv1.TokenRequest{}
	k := tokenRequestGVK
	prefix := fmt.Sprintf("%s in version %q cannot be handled as a %s: ", k.Kind, k.Version, k.Kind)
	var gvk schema.GroupVersionKind
	if mediaType(r) == mediaProtobuf {
		data, err := readBody(r)
		if err != nil {
			return nil, err
		}
		if gvk, err = decodeProtobuf(data, req, prefix); err != nil {
			return nil, err
		}
	} else {
		data, strict, err := bodyJSON(r)
		if err != nil {
			return nil, err
		}
		if err := decodeJSON(w, data, req, directive, strict, prefix); err != nil {
			return nil, err
		}
		gvk = req.GroupVersionKind()
	}
	if gvk.Version != "" && gvk.GroupVersion() != k.GroupVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)",
			gvk.GroupVersion(), k.GroupVersion()))
	}
	if gvk.Kind != "" && gvk.Kind != k.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", gvk.Kind, k.Kind))
	}
	return req, nil
}
