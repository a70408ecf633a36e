package api

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/skiff-sh/skiff/db"
)

// watchListEnabled: skiff serves watch-list (sendInitialEvents), as
// kube-apiserver does with its WatchList feature gate on.
const watchListEnabled = true

// listOptions are the query parameters of a list or watch, read as
// kube-apiserver reads them (metainternalversion.ListOptions), plus their
// parsed resourceVersion and continue token.
type listOptions struct {
	metainternalversion.ListOptions
	rv   uint64         // ResourceVersion as a number ("" and "0" are 0)
	cont *continueToken // the decoded Continue, nil without one
}

// parseListOptions reads the list/watch query of a request for rs. watch
// forces a watch (the deprecated /watch/ paths); a non-empty name restricts
// it to that object (/watch/…/{name}).
// NOTE: as kube-apiserver's ListResource: query decoding errors are 400,
// option combinations that validation refuses are 422 (ListOptions
// Invalid), unsupported field labels are 400.
func parseListOptions(r *http.Request, rs *resource, watch bool, name string) (listOptions, error) {
	var opts listOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(r.URL.Query(), metav1.SchemeGroupVersion, &opts.ListOptions); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	if opts.LabelSelector == nil {
		opts.LabelSelector = labels.Everything()
	}
	if opts.FieldSelector == nil {
		opts.FieldSelector = fields.Everything()
	}
	if watch {
		opts.Watch = true
	}
	if name != "" {
		if err := selectName(&opts.ListOptions, name); err != nil {
			return opts, err
		}
	}
	metainternalversion.SetListOptionsDefaults(&opts.ListOptions, watchListEnabled)
	if errs := metainternalversionvalidation.ValidateListOptions(&opts.ListOptions, watchListEnabled); len(errs) > 0 {
		return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	for _, req := range opts.FieldSelector.Requirements() {
		if !rs.hasField(req.Field) {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	var err error
	if opts.rv, err = parseRV(opts.ResourceVersion); err != nil {
		return opts, err
	}
	if opts.Continue != "" && !opts.Watch {
		if opts.cont, err = decodeContinue(opts.Continue); err != nil {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return opts, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
	}
	return opts, nil
}

// selectName restricts a watch on /watch/…/{name} to that object.
// NOTE: as kube-apiserver: a field selector, if any, must select that name.
func selectName(opts *metainternalversion.ListOptions, name string) error {
	if opts.FieldSelector.Empty() {
		opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name)
		return nil
	}
	if selected, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); !ok || selected != name {
		return apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
	}
	return nil
}

// hasField reports whether rs supports the field in field selectors.
func (rs *resource) hasField(name string) bool {
	_, ok := rs.fields(rs.store.New())[name]
	return ok
}

// matches reports whether obj matches the list's selectors.
func (opts listOptions) matches(rs *resource, obj db.Object) bool {
	return opts.LabelSelector.Matches(labels.Set(obj.GetLabels())) && opts.FieldSelector.Matches(rs.fields(obj))
}

// selective reports whether the list or watch has a selector.
func (opts listOptions) selective() bool {
	return !opts.LabelSelector.Empty() || !opts.FieldSelector.Empty()
}

// sendInitialEvents reports whether a watch starts with the current state.
func (opts listOptions) sendInitialEvents() bool {
	return opts.SendInitialEvents != nil && *opts.SendInitialEvents
}

// parseRV parses a resourceVersion parameter ("" and "0" are 0).
// NOTE: kube's message for a malformed one, from its storage versioner.
func parseRV(rv string) (uint64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		errs := field.ErrorList{field.Invalid(field.NewPath("resourceVersion"), rv, err.Error())}
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", errs.ToAggregate()))
	}
	return n, nil
}

// continueToken is kube-apiserver's continue token: base64url (unpadded)
// of this JSON. StartKey is the key, relative to the listed scope, at which
// the next page starts ("<namespace>/<name>\x00" across namespaces,
// "<name>\x00" within one or for cluster-scoped resources). An RV of -1
// continues at the newest state (the inconsistent continue a 410 offers).
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

// continueTokenVersion is the only token version kube defines.
const continueTokenVersion = "meta.k8s.io/v1"

// The reasons kube-apiserver gives for a continue token it cannot use.
var (
	errInvalidContinue = errors.New("continue key is not valid")
	errContinueRV      = errors.New("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	errContinueKey     = errors.New("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
	errContinueVersion = errors.New("continue key is not valid: server does not recognize this encoded version")
)

// encode is the token's string form.
func (c continueToken) encode() string {
	c.APIVersion = continueTokenVersion
	data, _ := json.Marshal(c) // NOTE: cannot fail: strings and an integer
	return base64.RawURLEncoding.EncodeToString(data)
}

// decodeContinue decodes and checks a continue token as kube-apiserver does
// (refusing a start key that climbs out of the listed scope).
func decodeContinue(s string) (*continueToken, error) {
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidContinue, err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidContinue, err)
	}
	switch {
	case c.APIVersion != continueTokenVersion:
		return nil, fmt.Errorf("%w %v", errContinueVersion, c.APIVersion)
	case c.ResourceVersion == 0:
		return nil, errContinueRV
	case c.StartKey == "":
		return nil, errContinueKey
	}
	key := "/" + strings.TrimPrefix(c.StartKey, "/")
	if path.Clean(key) != key {
		return nil, fmt.Errorf("%w: %v", errInvalidContinue, c.StartKey)
	}
	return &c, nil
}

// listKey is an object's key relative to the listed scope, the order of lists
// and of continue tokens: "<namespace>/<name>" across namespaces, "<name>"
// within one namespace or for cluster-scoped objects.
func listKey(namespace, name string, acrossNamespaces bool) string {
	if acrossNamespaces && namespace != "" {
		return namespace + "/" + name
	}
	return name
}

// boolParam reads a boolean query parameter as kube's query parameter
// conversion does: absent, "0" or any case of "false" is false, any other
// value (even empty) true — Python's client sends follow=True.
func boolParam(vals []string) bool {
	var b bool
	_ = runtime.Convert_Slice_string_To_bool(&vals, &b, nil) // never fails
	return b
}

// intParam parses a non-negative integer query parameter ("" = 0).
func intParam(v, name string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid value %q for %s: must be a non-negative integer", v, name))
	}
	return n, nil
}
