package serviceaccount

import (
	"fmt"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds of a requested token's lifetime, as kube-apiserver validates them,
// and its default.
const (
	MinExpirationSeconds     = 600
	MaxExpirationSeconds     = 1 << 32
	DefaultExpirationSeconds = 3600
)

// tokenRequestKind names TokenRequest in validation errors.
var tokenRequestKind = schema.GroupKind{Group: authenticationv1.GroupName, Kind: "TokenRequest"}

// Requester serves TokenRequests (POST serviceaccounts/<name>/token) for
// the API and for the node's projected token volumes alike.
type Requester struct {
	Issuer *Issuer
	// Audiences are the API's audiences (--api-audiences): the default of
	// a request that names none.
	Audiences []string
	Get       Getter
	// Node reads a node by name for a pod-bound token's node claims; a
	// missing node leaves the claims with its name only.
	Node func(name string) (*corev1.Node, error)
	// MaxExpiration shortens longer requests to it, with a warning
	// (kube-apiserver's --service-account-max-token-expiration); 0 = none.
	MaxExpiration time.Duration
}

// Request issues the token req asks for the ServiceAccount namespace/name,
// as kube-apiserver's TokenRequest REST: it defaults req (name, namespace,
// uid, audiences, expirationSeconds), validates it, checks the object the
// token is to be bound to and returns req with its status, and kube's
// warnings about it. Errors are kube's Status errors.
func (r *Requester) Request(namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, []string, error) {
	req = req.DeepCopy()
	if req.Name != "" && req.Name != name {
		return nil, nil, apierrors.NewInvalid(tokenRequestKind, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), req.Name,
			"must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != namespace {
		return nil, nil, apierrors.NewInvalid(tokenRequestKind, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace,
			"must match the service account namespace if specified")})
	}
	sa, err := r.Get.ServiceAccount(namespace, name)
	if err != nil {
		return nil, nil, err
	}
	if req.UID != "" && req.UID != sa.UID {
		return nil, nil, apierrors.NewConflict(schema.GroupResource{Group: authenticationv1.GroupName, Resource: "TokenRequest"}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = r.Audiences
	}
	if req.Spec.ExpirationSeconds == nil {
		req.Spec.ExpirationSeconds = ptr(int64(DefaultExpirationSeconds))
	}
	req.Name, req.Namespace, req.UID = sa.Name, sa.Namespace, sa.UID
	now := r.Issuer.now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}
	if errs := validateTokenRequest(req); len(errs) > 0 {
		return nil, nil, apierrors.NewInvalid(tokenRequestKind, "", errs)
	}
	b, err := r.binding(sa, req.Spec.BoundObjectRef)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	if max := int64(r.MaxExpiration / time.Second); max > 0 && *req.Spec.ExpirationSeconds > max {
		warnings = append(warnings, fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *req.Spec.ExpirationSeconds, max))
		req.Spec.ExpirationSeconds = &max
	}
	exp := time.Duration(*req.Spec.ExpirationSeconds) * time.Second
	lifetime, warnAfter := exp, time.Duration(0)
	// NOTE: kube-apiserver's --service-account-extend-token-expiration (on
	// by default): a pod's warn-only token for the API stays valid a year,
	// for clients that never read the refreshed file; its status still
	// says the lifetime asked for, by which the node refreshes it.
	if b.Pod != nil && *req.Spec.ExpirationSeconds == WarnOnlyExpirationSeconds && r.isAPIAudiences(req.Spec.Audiences) {
		lifetime, warnAfter = ExtendedExpiration, exp
	}
	tok, _, err := r.Issuer.Issue(b, req.Spec.Audiences, lifetime, warnAfter)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %w", err))
	}
	req.Status = authenticationv1.TokenRequestStatus{Token: tok, ExpirationTimestamp: metav1.NewTime(now.Add(exp))}
	return req, warnings, nil
}

// validateTokenRequest is kube's ValidateTokenRequest.
func validateTokenRequest(req *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec", "expirationSeconds")
	switch exp := *req.Spec.ExpirationSeconds; {
	case exp < MinExpirationSeconds:
		errs = append(errs, field.Invalid(p, exp, "may not specify a duration less than 10 minutes"))
	case exp > MaxExpirationSeconds:
		errs = append(errs, field.Invalid(p, exp, "may not specify a duration larger than 2^32 seconds"))
	}
	return errs
}

// binding looks up the object ref binds the token to (a Pod, with its
// node, or a Secret), as kube-apiserver checks it.
func (r *Requester) binding(sa *corev1.ServiceAccount, ref *authenticationv1.BoundObjectReference) (Binding, error) {
	b := Binding{ServiceAccount: sa}
	if ref == nil {
		return b, nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var uid string
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		pod, err := r.Get.Pod(sa.Namespace, ref.Name)
		if err != nil {
			return b, err
		}
		if pod.Spec.ServiceAccountName != sa.Name {
			return b, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa.Name))
		}
		b.Pod, uid = pod, string(pod.UID)
		if pod.Spec.NodeName != "" {
			b.Node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pod.Spec.NodeName}}
			if n, err := r.Node(pod.Spec.NodeName); err == nil {
				b.Node = n
			}
		}
	case gvk.Group == "" && gvk.Kind == "Secret":
		s, err := r.Get.Secret(sa.Namespace, ref.Name)
		if err != nil {
			return b, err
		}
		b.Secret, uid = s, string(s.UID)
	default:
		// NOTE: kube binds to a Node only behind its node-binding feature
		// gates; skiff's one node has no use for such tokens.
		return b, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	if ref.UID != "" && string(ref.UID) != uid {
		return b, apierrors.NewConflict(schema.GroupResource{Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return b, nil
}

// isAPIAudiences reports whether every one of auds is an API audience.
func (r *Requester) isAPIAudiences(auds []string) bool {
	for _, a := range auds {
		if !slices.Contains(r.Audiences, a) {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }
