package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/authn"
	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/rbac"
)

// anonymousPaths are the paths a request without credentials may ask:
// those kube's system:public-info-viewer role, the one bound to
// system:unauthenticated, allows. Anything else without credentials is a
// 401, as kube-apiserver limits anonymous requests to its health and
// version endpoints (AnonymousAuthConfigurableEndpoints).
var anonymousPaths = map[string]bool{"/livez": true, "/readyz": true, "/healthz": true, "/version": true, "/version/": true}

// withAuth is kube-apiserver's filter chain: authenticate (the unix
// socket is the admin; a certificate or a bearer token; anonymous only
// for anonymousPaths), impersonate (Impersonate-* headers, each checked
// with the impersonate verb), authorize (system:masters, then RBAC).
func (s *server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := s.authenticate(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		setRequestUser(r, user)
		if user, err = s.impersonate(r, user); err != nil {
			writeError(w, r, err)
			return
		}
		setRequestUser(r, user)
		if err := s.authorize(attributesOf(r, user)); err != nil {
			writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authenticate returns who sent r or kube's 401.
func (s *server) authenticate(r *http.Request) (authenticationv1.UserInfo, error) {
	if isSocket(r) {
		return socketAdmin, nil
	}
	user, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
	switch {
	case ok:
		r.Header.Del("Authorization")
		return user, nil
	case err == nil && anonymousPaths[r.URL.Path]:
		return authn.Anonymous(), nil
	}
	return authenticationv1.UserInfo{}, apierrors.NewUnauthorized("Unauthorized")
}

// attributesOf is what r asks, for RBAC.
func attributesOf(r *http.Request, user authenticationv1.UserInfo) rbac.Attributes {
	info := parseRequestInfo(r)
	return rbac.Attributes{User: user, Verb: info.Verb, ResourceRequest: info.IsResource, APIGroup: info.APIGroup,
		Resource: info.Resource, Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name, Path: info.Path}
}

// authorize returns nil if RBAC allows a, or kube's 403.
func (s *server) authorize(a rbac.Attributes) error {
	allowed, reason, err := s.decide(a)
	if err != nil {
		return err
	}
	if allowed {
		return nil
	}
	return forbidden(a, reason)
}

// decide asks RBAC about a over one read of the store.
func (s *server) decide(a rbac.Attributes) (allowed bool, reason string, err error) {
	if isAdmin(a.User) {
		return true, "", nil
	}
	err = s.store.Read(func(tx *db.Tx) error {
		allowed, reason = rbac.Authorize(txSource{tx}, a)
		return nil
	})
	return allowed, reason, err
}

// forbidden is kube's 403 of a denied request: "jobs.batch is forbidden:
// User "u" cannot list resource "jobs" in API group "batch" in the
// namespace "default"", with RBAC's reason after a colon if it has one.
func forbidden(a rbac.Attributes, reason string) error {
	msg := forbiddenMessage(a)
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	return apierrors.NewForbidden(gr, a.Name, errors.New(msg))
}

func forbiddenMessage(a rbac.Attributes) string {
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", a.User.Username, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", a.User.Username, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", a.User.Username, a.Verb, resource, a.APIGroup)
}

// The impersonation headers kube-apiserver reads.
const (
	impersonateUser        = "Impersonate-User"
	impersonateGroup       = "Impersonate-Group"
	impersonateUID         = "Impersonate-Uid"
	impersonateExtraPrefix = "Impersonate-Extra-"
)

// impersonate returns the user r asks to act as, once user may
// impersonate each part of it (the user or ServiceAccount, each group, the
// uid, each extra value), or user when r asks for no one.
func (s *server) impersonate(r *http.Request, user authenticationv1.UserInfo) (authenticationv1.UserInfo, error) {
	name := r.Header.Get(impersonateUser)
	groups := r.Header.Values(impersonateGroup)
	uid := r.Header.Get(impersonateUID)
	extra := map[string]authenticationv1.ExtraValue{}
	for key, values := range r.Header {
		if k, ok := strings.CutPrefix(key, impersonateExtraPrefix); ok {
			k, err := url.PathUnescape(k)
			if err != nil {
				return user, apierrors.NewInternalError(fmt.Errorf("could not unescape %q: %w", key, err))
			}
			extra[strings.ToLower(k)] = values
		}
	}
	if name == "" {
		if len(groups) > 0 || len(extra) > 0 || uid != "" {
			return user, apierrors.NewInternalError(errors.New("requested impersonation of groups, uid or extra without impersonating a user"))
		}
		return user, nil
	}
	check := func(a rbac.Attributes) error {
		a.User, a.Verb, a.ResourceRequest = user, "impersonate", true
		return s.authorize(a)
	}
	as := authenticationv1.UserInfo{Username: name, UID: uid, Groups: groups}
	if ns, sa, ok := strings.Cut(strings.TrimPrefix(name, "system:serviceaccount:"), ":"); ok && strings.HasPrefix(name, "system:serviceaccount:") {
		if err := check(rbac.Attributes{Resource: "serviceaccounts", Namespace: ns, Name: sa}); err != nil {
			return user, err
		}
		if len(groups) == 0 {
			as.Groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
		}
	} else if err := check(rbac.Attributes{Resource: "users", Name: name}); err != nil {
		return user, err
	}
	for _, g := range groups {
		if err := check(rbac.Attributes{Resource: "groups", Name: g}); err != nil {
			return user, err
		}
	}
	if uid != "" {
		if err := check(rbac.Attributes{APIGroup: "authentication.k8s.io", Resource: "uids", Name: uid}); err != nil {
			return user, err
		}
	}
	for k, values := range extra {
		for _, v := range values {
			if err := check(rbac.Attributes{APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: k, Name: v}); err != nil {
				return user, err
			}
		}
	}
	if len(extra) > 0 {
		as.Extra = extra
	}
	if name == authn.UserAnonymous {
		as.Groups = appendMissing(as.Groups, authn.GroupUnauthenticated)
	} else {
		as.Groups = appendMissing(as.Groups, authn.GroupAuthenticated)
	}
	for key := range r.Header {
		if key == impersonateUser || key == impersonateGroup || key == impersonateUID || strings.HasPrefix(key, impersonateExtraPrefix) {
			r.Header.Del(key)
		}
	}
	return as, nil
}

func appendMissing(groups []string, g string) []string {
	for _, have := range groups {
		if have == g {
			return groups
		}
	}
	return append(groups, g)
}

// txSource is RBAC's view of the store inside one transaction.
type txSource struct{ tx *db.Tx }

var _ rbac.Source = txSource{}

func (s txSource) ClusterRoleBindings() ([]*rbacv1.ClusterRoleBinding, error) {
	objs, err := s.tx.List(db.ClusterRoleBindings, "", nil)
	out := make([]*rbacv1.ClusterRoleBinding, len(objs))
	for i, o := range objs {
		out[i] = o.(*rbacv1.ClusterRoleBinding)
	}
	return out, err
}

func (s txSource) RoleBindings(namespace string) ([]*rbacv1.RoleBinding, error) {
	objs, err := s.tx.List(db.RoleBindings, namespace, nil)
	out := make([]*rbacv1.RoleBinding, len(objs))
	for i, o := range objs {
		out[i] = o.(*rbacv1.RoleBinding)
	}
	return out, err
}

func (s txSource) ClusterRole(name string) (*rbacv1.ClusterRole, error) {
	obj, err := s.tx.Get(db.ClusterRoles, "", name)
	if err != nil {
		return nil, statusFor(err, schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrole"}, name)
	}
	return obj.(*rbacv1.ClusterRole), nil
}

func (s txSource) Role(namespace, name string) (*rbacv1.Role, error) {
	obj, err := s.tx.Get(db.Roles, namespace, name)
	if err != nil {
		return nil, statusFor(err, schema.GroupResource{Group: rbacv1.GroupName, Resource: "role"}, name)
	}
	return obj.(*rbacv1.Role), nil
}

// admitRBAC is kube's escalation check of a role or binding write: a
// member of system:masters writes anything; otherwise a role needs the
// escalate verb on it or every right it grants, and a binding the bind
// verb on its role or every right of that role (and for a ClusterRole's
// aggregationRule, cluster-admin's rights).
func admitRBAC(s *server, tx *db.Tx, user authenticationv1.UserInfo, obj, _ db.Object) error {
	if rbac.EscalationAllowed(user) {
		return nil
	}
	src := txSource{tx}
	ns := obj.GetNamespace()
	var gr schema.GroupResource
	var rules []rbacv1.PolicyRule
	allowedBy := func(verb, resource, name string) bool {
		ok, _ := rbac.Authorize(src, rbac.Attributes{User: user, Verb: verb, ResourceRequest: true,
			APIGroup: rbacv1.GroupName, Resource: resource, Namespace: ns, Name: name})
		return ok
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		gr = schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}
		if allowedBy("escalate", "roles", o.Name) {
			return nil
		}
		rules = o.Rules
	case *rbacv1.ClusterRole:
		gr = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}
		if allowedBy("escalate", "clusterroles", o.Name) {
			return nil
		}
		if err := rbac.ConfirmNoEscalation(src, user, "", o.Rules); err != nil {
			return apierrors.NewForbidden(gr, o.Name, err)
		}
		if o.AggregationRule != nil {
			full := []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
				{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}
			if rbac.ConfirmNoEscalation(src, user, "", full) != nil {
				return apierrors.NewForbidden(gr, o.Name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
			}
		}
		return nil
	case *rbacv1.RoleBinding:
		gr = schema.GroupResource{Group: rbacv1.GroupName, Resource: "rolebindings"}
		if allowedBy("bind", bindResource(o.RoleRef), o.RoleRef.Name) {
			return nil
		}
		var err error
		if rules, err = rbac.RoleRefRules(src, o.RoleRef, ns); err != nil {
			return err
		}
	case *rbacv1.ClusterRoleBinding:
		gr = schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrolebindings"}
		if allowedBy("bind", bindResource(o.RoleRef), o.RoleRef.Name) {
			return nil
		}
		var err error
		if rules, err = rbac.RoleRefRules(src, o.RoleRef, ""); err != nil {
			return err
		}
	}
	if err := rbac.ConfirmNoEscalation(src, user, ns, rules); err != nil {
		return apierrors.NewForbidden(gr, obj.GetName(), err)
	}
	return nil
}

// bindResource is the resource the bind verb is checked on for ref.
func bindResource(ref rbacv1.RoleRef) string {
	if ref.Kind == "Role" {
		return "roles"
	}
	return "clusterroles"
}
