package api

import (
	"bytes"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// writeOptions are the query options of a create, update or patch.
type writeOptions struct {
	dryRun bool
	// manager is the fieldManager, or else the client's user agent up to
	// its first "/" (as kube-apiserver names an anonymous manager).
	manager    string
	validation fieldValidation
	force      bool // apply: take over the fields other managers own
	// applied: the object comes from a server-side apply, which already set
	// its managedFields.
	applied bool
	// user is who writes: RBAC's escalation check asks what it holds.
	user authenticationv1.UserInfo
}

// The kinds of option that writes take, named as kube names them in errors.
const (
	createOptionsKind = "CreateOptions"
	updateOptionsKind = "UpdateOptions"
	patchOptionsKind  = "PatchOptions"
)

// parseWriteOptions reads the CreateOptions, UpdateOptions or PatchOptions
// (of patch type pt) of a request.
// NOTE: as kube-apiserver's handlers: a query that does not decode is 400,
// options that validation refuses (dryRun other than All, fieldValidation
// other than Ignore/Warn/Strict, an unprintable or too long fieldManager, a
// missing fieldManager on apply, force on another patch) are 422.
func parseWriteOptions(r *http.Request, kind string, pt types.PatchType) (writeOptions, error) {
	var (
		dryRun             []string
		manager, directive string
		force              *bool
		errs               field.ErrorList
		decodeErr          error
	)
	q, codec := r.URL.Query(), metainternalversionscheme.ParameterCodec
	switch kind {
	case createOptionsKind:
		var o metav1.CreateOptions
		decodeErr = codec.DecodeParameters(q, metav1.SchemeGroupVersion, &o)
		errs = metav1validation.ValidateCreateOptions(&o)
		dryRun, manager, directive = o.DryRun, o.FieldManager, o.FieldValidation
	case updateOptionsKind:
		var o metav1.UpdateOptions
		decodeErr = codec.DecodeParameters(q, metav1.SchemeGroupVersion, &o)
		errs = metav1validation.ValidateUpdateOptions(&o)
		dryRun, manager, directive = o.DryRun, o.FieldManager, o.FieldValidation
	default:
		var o metav1.PatchOptions
		decodeErr = codec.DecodeParameters(q, metav1.SchemeGroupVersion, &o)
		errs = metav1validation.ValidatePatchOptions(&o, pt)
		dryRun, manager, directive, force = o.DryRun, o.FieldManager, o.FieldValidation, o.Force
	}
	if decodeErr != nil {
		return writeOptions{}, apierrors.NewBadRequest(decodeErr.Error())
	}
	if len(errs) > 0 {
		return writeOptions{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
	}
	opts := writeOptions{
		dryRun:     len(dryRun) > 0,
		manager:    managerOrUserAgent(manager, r.UserAgent()),
		user:       requestUser(r),
		validation: fieldValidation(directive),
		force:      force != nil && *force,
	}
	if opts.validation == "" {
		opts.validation = validationWarn
	}
	return opts, nil
}

// managerOrUserAgent is the field manager of a write: the one named, or
// the printable start of the user agent (up to its first "/", at most
// 128 bytes), as kube-apiserver derives it.
func managerOrUserAgent(manager, userAgent string) string {
	if manager != "" {
		return manager
	}
	prefix, _, _ := strings.Cut(userAgent, "/")
	var buf bytes.Buffer
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if buf.Len()+utf8.RuneLen(r) > metav1validation.FieldManagerMaxLength {
			break
		}
		buf.WriteRune(r)
	}
	return buf.String()
}
