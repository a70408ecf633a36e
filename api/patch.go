package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/gorilla/mux"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/skiff-sh/skiff/db"
)

// patch serves PATCH of an object or of its status: JSON patch, merge
// patch or strategic merge patch, applied to the stored object inside the
// update transaction.
func (s *server) patch(rs *resource, status bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := mux.Vars(r)
		pt := types.PatchType(mediaType(r))
		switch pt {
		case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		default:
			writeError(w, r, unsupportedPatchType(string(pt)))
			return
		}
		directive, err := validationDirective(r)
		var body []byte
		if err == nil {
			body, err = readBody(r)
		}
		dryRun, derr := isDryRun(r)
		if err == nil {
			err = derr
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		out, err := s.updateObject(rs, v["namespace"], v["name"], status, dryRun, func(old db.Object) (db.Object, error) {
			return applyPatch(w, rs, pt, body, old, directive)
		})
		if err != nil {
			writeError(w, r, statusFor(err, rs.groupResource(), v["name"]))
			return
		}
		s.respond(w, r, rs, http.StatusOK, out)
	}
}

// unsupportedPatchType is the 415 for a PATCH in an unknown format.
func unsupportedPatchType(pt string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusUnsupportedMediaType,
		Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format (%q) - accepted media types include: %s, %s, %s",
			pt, types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType),
	}}
}

// applyPatch applies a patch to old and decodes the result as a new object.
func applyPatch(w http.ResponseWriter, rs *resource, pt types.PatchType, patch []byte, old db.Object, directive fieldValidation) (db.Object, error) {
	rs.setTypeMeta(old)
	original, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", rs.kind, err)
	}
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		var p jsonpatch.Patch
		if p, err = jsonpatch.DecodePatch(patch); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		patched, err = p.Apply(original)
	case types.MergePatchType:
		if !json.Valid(patch) {
			return nil, apierrors.NewBadRequest("error decoding patch: invalid JSON")
		}
		patched, err = jsonpatch.MergePatch(original, patch)
	case types.StrategicMergePatchType:
		var m map[string]any
		if err := json.Unmarshal(patch, &m); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		patched, err = strategicpatch.StrategicMergePatch(original, patch, reflect.New(rs.goType).Interface())
	}
	if err != nil {
		return nil, patchFailed(err)
	}
	obj := rs.store.New()
	if err := decodeJSON(w, patched, obj, directive, nil, decodePrefix(rs)); err != nil {
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
