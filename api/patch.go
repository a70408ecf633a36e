package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/gorilla/mux"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"github.com/skiff-sh/skiff/db"
)

// patch serves PATCH of an object or of its status: JSON patch, merge
// patch or strategic merge patch, applied to the stored object inside the
// update transaction; or a server-side apply.
func (s *server) patch(rs *resource, status bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := mux.Vars(r)
		pt := types.PatchType(mediaType(r))
		if !slices.Contains(patchTypes, string(pt)) {
			writeError(w, r, unsupportedPatchType(string(pt)))
			return
		}
		opts, err := parseWriteOptions(r, patchOptionsKind, pt)
		var body []byte
		if err == nil {
			body, err = readBody(r)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		if pt == types.ApplyYAMLPatchType {
			s.apply(w, r, rs, status, body, opts)
			return
		}
		out, err := s.updateObject(rs, v["namespace"], v["name"], status, opts, func(old db.Object) (db.Object, error) {
			return applyPatch(w, rs, pt, body, old, opts.validation)
		})
		if err != nil {
			writeError(w, r, statusFor(err, rs.groupResource(), v["name"]))
			return
		}
		s.respond(w, r, rs, http.StatusOK, out)
	}
}

// unsupportedPatchType is the 415 for a PATCH in an unknown format.
// NOTE: kube-apiserver's wording (negotiation.NewUnsupportedMediaTypeError).
func unsupportedPatchType(string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + strings.Join(patchTypes, ", "),
	}}
}

// maxJSONPatchOperations is kube-apiserver's limit on one JSON patch.
const maxJSONPatchOperations = 10000

// applyPatch applies a patch to old and decodes the result as a new object.
func applyPatch(w http.ResponseWriter, rs *resource, pt types.PatchType, patch []byte, old db.Object, directive fieldValidation) (db.Object, error) {
	rs.setTypeMeta(old)
	original, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", rs.kind, err)
	}
	var (
		patched []byte
		strict  []error // duplicate fields in the patch
	)
	switch pt {
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		patched, err = p.Apply(original)
	case types.MergePatchType, types.StrategicMergePatchType:
		if strict, err = patchDuplicates(patch, directive); err != nil {
			return nil, err
		}
		if pt == types.MergePatchType {
			patched, err = jsonpatch.MergePatch(original, patch)
		} else {
			patched, err = strategicpatch.StrategicMergePatch(original, patch, reflect.New(rs.goType).Interface())
		}
	}
	if err != nil {
		return nil, patchFailed(err)
	}
	// NOTE: a patched object that does not decode (a field of the wrong
	// type) is kube-apiserver's 422 on the field "patch", not a 400.
	obj := rs.store.New()
	more, err := sigsjson.UnmarshalStrict(patched, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
			field.Invalid(field.NewPath("patch"), string(patch), err.Error())})
	}
	if err := reportStrict(w, append(strict, more...), directive, decodePrefix(rs)); err != nil {
		return nil, err
	}
	if err := checkTypeMeta(rs, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// patchFailed is the 422 for a patch that cannot be applied.
func patchFailed(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnprocessableEntity,
		Reason:  metav1.StatusReasonInvalid,
		Message: err.Error(),
	}}
}

// patchDuplicates decodes a merge or strategic merge patch (400 if it is
// not a JSON object) and, unless fieldValidation is Ignore, returns its
// duplicate fields as strict errors.
// NOTE: kube-apiserver reports duplicate fields of such patches like
// unknown fields of the patched object.
func patchDuplicates(patch []byte, directive fieldValidation) ([]error, error) {
	var m map[string]any
	opts := []sigsjson.StrictOption{}
	if directive != validationIgnore {
		opts = append(opts, sigsjson.DisallowDuplicateFields)
	}
	strict, err := sigsjson.UnmarshalStrict(patch, &m, opts...)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	return strict, nil
}
