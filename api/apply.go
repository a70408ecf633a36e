package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/skiff-sh/skiff/db"
)

// apply serves a server-side apply (PATCH with application/apply-patch+yaml)
// of an object or of its status: the applied configuration is merged into
// the stored object by the structured-merge-diff field manager, which
// records what opts.manager owns and refuses (409) to change fields that
// other managers own unless opts.force. Applying to an object that does
// not exist creates it (201).
func (s *server) apply(w http.ResponseWriter, r *http.Request, rs *resource, status bool, body []byte, opts writeOptions) {
	v := mux.Vars(r)
	patch, err := decodeApplyPatch(w, body, opts.validation)
	if err != nil {
		writeError(w, r, err)
		return
	}
	opts.applied = true
	out, err := s.updateObject(rs, v["namespace"], v["name"], status, opts, func(old db.Object) (db.Object, error) {
		return applyTo(rs, status, old, patch, opts)
	})
	code := http.StatusOK
	if errors.Is(err, db.ErrNotFound) && !status {
		// NOTE: kube-apiserver's apply creates a missing object (not
		// through a subresource).
		code = http.StatusCreated
		out, err = s.applyCreate(rs, v["namespace"], v["name"], patch, opts)
	}
	if err != nil {
		writeError(w, r, statusFor(err, rs.groupResource(), v["name"]))
		return
	}
	s.respond(w, r, rs, code, out)
}

// applyCreate creates the object that applying patch to nothing makes.
func (s *server) applyCreate(rs *resource, ns, name string, patch *unstructured.Unstructured, opts writeOptions) (db.Object, error) {
	obj, err := applyTo(rs, false, rs.store.New(), patch, opts)
	if err != nil {
		return nil, err
	}
	if err := checkObjectName(obj, ns, name); err != nil {
		return nil, err
	}
	return s.createObject(rs, obj, opts)
}

// applyTo merges the applied configuration into live (a copy it owns) and
// returns the result, with its managedFields.
func applyTo(rs *resource, status bool, live db.Object, patch *unstructured.Unstructured, opts writeOptions) (db.Object, error) {
	fm, err := fieldManagerFor(rs, status)
	if err != nil {
		return nil, err
	}
	rs.setTypeMeta(live)
	out, err := fm.Apply(live, patch.DeepCopy(), opts.manager, opts.force)
	var apiStatus apierrors.APIStatus
	switch {
	case err != nil && !errors.As(err, &apiStatus) && isApplyInputError(err):
		// NOTE: kube-apiserver 1.34 answers these (an applied field the
		// schema does not declare or of the wrong type, a value the Go type
		// cannot hold) with a 500, a known bug (kubernetes/kubernetes#139253);
		// the fix proposed there makes them 400s with the same message: a
		// client's mistake is never a 5xx here.
		return nil, apierrors.NewBadRequest(err.Error())
	case err != nil:
		return nil, err
	}
	obj, ok := out.(db.Object)
	if !ok || out.GetObjectKind().GroupVersionKind() != rs.gvk() {
		return nil, fmt.Errorf("applying to %s: got %T", rs.plural, out)
	}
	return obj, nil
}

// decodeApplyPatch decodes an apply patch (YAML or JSON); duplicate fields
// are reported as fieldValidation says.
// NOTE: as kube-apiserver's applyPatcher: an undecodable patch is 400
// "error decoding YAML"; unknown fields are always refused (by the field
// manager: "field not declared in schema"); duplicates fail a Strict apply
// with "error strict decoding YAML" and are a warning under Warn.
func decodeApplyPatch(w http.ResponseWriter, body []byte, directive fieldValidation) (*unstructured.Unstructured, error) {
	patch := &unstructured.Unstructured{Object: map[string]any{}}
	if err := yaml.Unmarshal(body, &patch.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
	}
	if patch.Object == nil {
		patch.Object = map[string]any{}
	}
	if directive == validationIgnore {
		return patch, nil
	}
	if err := yaml.UnmarshalStrict(body, &map[string]any{}); err != nil {
		if directive == validationStrict {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: %v", err))
		}
		addWarning(w, err.Error())
	}
	return patch, nil
}

// isApplyInputError reports whether a plain error of the field manager's
// Apply comes from the applied configuration rather than from the stored
// object.
func isApplyInputError(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "failed to create typed patch object") ||
		strings.HasPrefix(msg, "failed to convert new object")
}
