package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gorilla/mux"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/rbac"
)

// The review groups: create-only kinds that ask authentication and
// authorization questions and store nothing.
var (
	authenticationV1 = groupVersion{group: authenticationv1.GroupName, version: "v1"}
	authorizationV1  = groupVersion{group: "authorization.k8s.io", version: "v1"}
)

// reviewAPIResources are the review kinds of gv in discovery.
func reviewAPIResources(gv groupVersion) []metav1.APIResource {
	create := metav1.Verbs{"create"}
	switch gv {
	case authenticationV1:
		return []metav1.APIResource{
			{Name: "selfsubjectreviews", SingularName: "selfsubjectreview", Kind: "SelfSubjectReview", Verbs: create},
			{Name: "tokenreviews", SingularName: "tokenreview", Kind: "TokenReview", Verbs: create},
		}
	case authorizationV1:
		return []metav1.APIResource{
			{Name: "localsubjectaccessreviews", SingularName: "localsubjectaccessreview", Namespaced: true, Kind: "LocalSubjectAccessReview", Verbs: create},
			{Name: "selfsubjectaccessreviews", SingularName: "selfsubjectaccessreview", Kind: "SelfSubjectAccessReview", Verbs: create},
			{Name: "selfsubjectrulesreviews", SingularName: "selfsubjectrulesreview", Kind: "SelfSubjectRulesReview", Verbs: create},
			{Name: "subjectaccessreviews", SingularName: "subjectaccessreview", Kind: "SubjectAccessReview", Verbs: create},
		}
	}
	return nil
}

// reviewRoutes registers the review endpoints; each answers POST only.
func (s *server) reviewRoutes(r *mux.Router) {
	post := func(path string, gr schema.GroupResource, h http.HandlerFunc) {
		r.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				writeError(w, r, methodNotSupported(gr, r.Method))
				return
			}
			h(w, r)
		})
	}
	authnPrefix, authzPrefix := authenticationV1.prefix(), authorizationV1.prefix()
	post(authnPrefix+"/selfsubjectreviews", authenticationV1.schema().WithResource("selfsubjectreviews").GroupResource(), s.selfSubjectReview)
	post(authnPrefix+"/tokenreviews", authenticationV1.schema().WithResource("tokenreviews").GroupResource(), s.tokenReview)
	post(authzPrefix+"/selfsubjectaccessreviews", authorizationV1.schema().WithResource("selfsubjectaccessreviews").GroupResource(), s.selfSubjectAccessReview)
	post(authzPrefix+"/subjectaccessreviews", authorizationV1.schema().WithResource("subjectaccessreviews").GroupResource(), s.subjectAccessReview(false))
	post(authzPrefix+"/namespaces/{namespace}/localsubjectaccessreviews", authorizationV1.schema().WithResource("localsubjectaccessreviews").GroupResource(), s.subjectAccessReview(true))
	post(authzPrefix+"/selfsubjectrulesreviews", authorizationV1.schema().WithResource("selfsubjectrulesreviews").GroupResource(), s.selfSubjectRulesReview)
}

// decodeReview decodes a review body into obj.
func decodeReview(w http.ResponseWriter, r *http.Request, obj any) error {
	data, strict, err := bodyJSON(r)
	if err != nil {
		return err
	}
	return decodeJSON(w, data, obj, validationWarn, strict, "")
}

// selfSubjectReview answers who the requester is (kubectl auth whoami).
func (s *server) selfSubjectReview(w http.ResponseWriter, r *http.Request) {
	var review authenticationv1.SelfSubjectReview
	if err := decodeReview(w, r, &review); err != nil {
		writeError(w, r, err)
		return
	}
	review.TypeMeta = metav1.TypeMeta{APIVersion: authenticationV1.String(), Kind: "SelfSubjectReview"}
	review.Status.UserInfo = requestUser(r)
	review.CreationTimestamp = metav1.Now()
	writeJSON(w, r, http.StatusCreated, &review)
}

// tokenReview runs the token chain on spec.token.
func (s *server) tokenReview(w http.ResponseWriter, r *http.Request) {
	var review authenticationv1.TokenReview
	if err := decodeReview(w, r, &review); err != nil {
		writeError(w, r, err)
		return
	}
	if review.Spec.Token == "" {
		writeError(w, r, apierrors.NewBadRequest("token is required for TokenReview"))
		return
	}
	review.TypeMeta = metav1.TypeMeta{APIVersion: authenticationV1.String(), Kind: "TokenReview"}
	user, ok, err := s.cfg.Authenticator.AuthenticateToken(r.Context(), review.Spec.Token)
	review.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, Audiences: review.Spec.Audiences}
	if ok {
		review.Status.User = user
	} else if err != nil {
		review.Status.Error = err.Error()
	}
	review.Spec.Token = ""
	writeJSON(w, r, http.StatusCreated, &review)
}

// accessAttributes are RBAC's attributes of a review's spec.
func accessAttributes(user authenticationv1.UserInfo, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) rbac.Attributes {
	a := rbac.Attributes{User: user}
	switch {
	case res != nil:
		a.ResourceRequest, a.Verb, a.APIGroup, a.Resource, a.Subresource, a.Namespace, a.Name =
			true, res.Verb, res.Group, res.Resource, res.Subresource, res.Namespace, res.Name
	case nonRes != nil:
		a.Verb, a.Path = nonRes.Verb, nonRes.Path
	}
	return a
}

// accessStatus decides a review.
func (s *server) accessStatus(a rbac.Attributes) (authorizationv1.SubjectAccessReviewStatus, error) {
	allowed, reason, err := s.decide(a)
	return authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Reason: reason}, err
}

// selfSubjectAccessReview answers whether the requester may do what the
// spec says (kubectl auth can-i).
func (s *server) selfSubjectAccessReview(w http.ResponseWriter, r *http.Request) {
	var review authorizationv1.SelfSubjectAccessReview
	if err := decodeReview(w, r, &review); err != nil {
		writeError(w, r, err)
		return
	}
	spec := review.Spec
	if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
		writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Group: authorizationV1.group, Kind: "SelfSubjectAccessReview"}, "",
			reviewSpecErrors(spec.ResourceAttributes != nil)))
		return
	}
	st, err := s.accessStatus(accessAttributes(requestUser(r), spec.ResourceAttributes, spec.NonResourceAttributes))
	if err != nil {
		writeError(w, r, err)
		return
	}
	review.TypeMeta = metav1.TypeMeta{APIVersion: authorizationV1.String(), Kind: "SelfSubjectAccessReview"}
	review.Status = st
	writeJSON(w, r, http.StatusCreated, &review)
}

// subjectAccessReview answers for the user the spec names (a
// LocalSubjectAccessReview in the namespace of its URL).
func (s *server) subjectAccessReview(local bool) http.HandlerFunc {
	kind := "SubjectAccessReview"
	if local {
		kind = "LocalSubjectAccessReview"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		var review authorizationv1.SubjectAccessReview
		if err := decodeReview(w, r, &review); err != nil {
			writeError(w, r, err)
			return
		}
		spec := review.Spec
		gk := schema.GroupKind{Group: authorizationV1.group, Kind: kind}
		if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
			writeError(w, r, apierrors.NewInvalid(gk, "", reviewSpecErrors(spec.ResourceAttributes != nil)))
			return
		}
		if spec.User == "" && len(spec.Groups) == 0 {
			writeError(w, r, apierrors.NewInvalid(gk, "", fieldErrors("spec.user", `at least one of user or group must be specified`)))
			return
		}
		if ns := mux.Vars(r)["namespace"]; local && (spec.ResourceAttributes == nil || spec.ResourceAttributes.Namespace != ns) {
			writeError(w, r, apierrors.NewBadRequest("spec.resourceAttributes.namespace must match namespace: "+ns))
			return
		}
		user := authenticationv1.UserInfo{Username: spec.User, UID: spec.UID, Groups: spec.Groups}
		st, err := s.accessStatus(accessAttributes(user, spec.ResourceAttributes, spec.NonResourceAttributes))
		if err != nil {
			writeError(w, r, err)
			return
		}
		review.TypeMeta = metav1.TypeMeta{APIVersion: authorizationV1.String(), Kind: kind}
		review.Status = st
		writeJSON(w, r, http.StatusCreated, &review)
	}
}

// selfSubjectRulesReview lists what the requester may do in a namespace
// (kubectl auth can-i --list).
func (s *server) selfSubjectRulesReview(w http.ResponseWriter, r *http.Request) {
	var review authorizationv1.SelfSubjectRulesReview
	if err := decodeReview(w, r, &review); err != nil {
		writeError(w, r, err)
		return
	}
	if review.Spec.Namespace == "" {
		writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Group: authorizationV1.group, Kind: "SelfSubjectRulesReview"}, "",
			fieldErrors("spec.namespace", "")))
		return
	}
	user := requestUser(r)
	st := authorizationv1.SubjectRulesReviewStatus{ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
	if isAdmin(user) {
		// NOTE: kube's privileged-group authorizer gives system:masters
		// everything, and says so in the rules it lists.
		st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
		st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}})
	}
	err := s.store.Read(func(tx *db.Tx) error {
		rules, errs := rbac.RulesFor(txSource{tx}, user, review.Spec.Namespace)
		for _, rule := range rules {
			if len(rule.NonResourceURLs) > 0 {
				st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: rule.Verbs, NonResourceURLs: rule.NonResourceURLs})
				continue
			}
			st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: rule.Verbs, APIGroups: rule.APIGroups,
				Resources: rule.Resources, ResourceNames: rule.ResourceNames})
		}
		if len(errs) > 0 {
			st.Incomplete = true
			st.EvaluationError = aggregateErrors(errs)
		}
		return nil
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	review.TypeMeta = metav1.TypeMeta{APIVersion: authorizationV1.String(), Kind: "SelfSubjectRulesReview"}
	review.Status = st
	writeJSON(w, r, http.StatusCreated, &review)
}

// reviewSpecErrors is kube's refusal of a review that names both resource
// and non-resource attributes (both true) or neither.
func reviewSpecErrors(both bool) field.ErrorList {
	p := field.NewPath("spec", "resourceAttributes")
	if both {
		return field.ErrorList{field.Invalid(p, "resourceAttributes", "cannot be specified in combination with nonResourceAttributes")}
	}
	return field.ErrorList{field.Required(p, "exactly one of nonResourceAttributes or resourceAttributes must be specified")}
}

// fieldErrors is one Required error at path.
func fieldErrors(path, detail string) field.ErrorList {
	parts := strings.Split(path, ".")
	return field.ErrorList{field.Required(field.NewPath(parts[0], parts[1:]...), detail)}
}

func aggregateErrors(errs []error) string {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	slices.Sort(msgs)
	if len(msgs) == 1 {
		return msgs[0]
	}
	out := "["
	for i, m := range msgs {
		if i > 0 {
			out += ", "
		}
		out += m
	}
	return out + "]"
}
