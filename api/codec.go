package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// maxBodyBytes bounds request bodies.
// NOTE: kube-apiserver's limit is 3 MiB (MaxRequestBodyBytes).
const maxBodyBytes = 3 << 20

const (
	mediaJSON = "application/json"
	mediaYAML = "application/yaml"
)

// writeJSON encodes obj as the JSON response with the given code, indented
// when the request asks for pretty output.
func writeJSON(w http.ResponseWriter, r *http.Request, code int, obj any) {
	writeJSONAs(w, r, code, mediaJSON, obj)
}

// writeJSONAs is writeJSON with the given Content-Type.
func writeJSONAs(w http.ResponseWriter, r *http.Request, code int, contentType string, obj any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	if isPretty(r) {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(obj); err != nil {
		http.Error(w, fmt.Sprintf("encoding response: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// isPretty: ?pretty= as strconv.ParseBool reads it (an unparsable value
// is false), else whether the client is a human's (curl, wget, a browser),
// as kube-apiserver decides.
func isPretty(r *http.Request) bool {
	if r == nil {
		return false
	}
	if v := r.URL.Query().Get("pretty"); v != "" {
		pretty, _ := strconv.ParseBool(v)
		return pretty
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}

// readBody reads the request body, failing with 413 beyond maxBodyBytes.
func readBody(r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		if terr := bodyTimeout(err); terr != nil {
			return nil, terr
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	if len(data) > maxBodyBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBodyBytes))
	}
	return data, nil
}

// unsupportedMediaType is the 415 Status for a body in an unknown format.
func unsupportedMediaType(contentType string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusUnsupportedMediaType,
		Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format (%q) - accepted media types include: %s, %s, %s",
			contentType, mediaJSON, mediaYAML, mediaProtobuf),
	}}
}

// mediaType is the request's Content-Type without parameters ("" if absent).
func mediaType(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	return mt
}

// bodyJSON reads the request body and returns it as JSON: YAML bodies are
// converted, anything but JSON or YAML is a 415. Duplicate keys in YAML are
// reported as strict errors.
func bodyJSON(r *http.Request) (data []byte, strict []error, err error) {
	mt := mediaType(r)
	if mt != "" && mt != mediaJSON && mt != mediaYAML {
		return nil, nil, unsupportedMediaType(mt)
	}
	data, err = readBody(r)
	if err != nil {
		return nil, nil, err
	}
	if mt != mediaYAML {
		return data, nil, nil
	}
	js, strictErr := yaml.YAMLToJSONStrict(data)
	if strictErr == nil {
		return js, nil, nil
	}
	js, err = yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("error converting YAML to JSON: %v", err))
	}
	// NOTE: kube-apiserver reports YAML duplicates with the strict
	// converter's own message.
	return js, []error{strictErr}, nil
}

// fieldValidation is the request's fieldValidation directive.
type fieldValidation string

const (
	validationIgnore fieldValidation = "Ignore"
	validationWarn   fieldValidation = "Warn"
	validationStrict fieldValidation = "Strict"
)

// validationDirective reads ?fieldValidation=.
// NOTE: kube-apiserver defaults an absent directive to Warn (since 1.27):
// unknown fields are dropped and reported in Warning headers.
func validationDirective(r *http.Request) (fieldValidation, error) {
	switch v := fieldValidation(r.URL.Query().Get("fieldValidation")); v {
	case "":
		return validationWarn, nil
	case validationIgnore, validationWarn, validationStrict:
		return v, nil
	default:
		return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation parameter unsupported: %s", v))
	}
}

// decodeJSON decodes data into obj, collecting unknown and duplicate fields
// as strict errors, and applies the directive: Strict → 400, Warn → a
// Warning header per problem, Ignore → dropped. A malformed body is a 400.
// prefix starts the 400's message (kube's "Job in version \"v1\" cannot be
// handled as a Job: ").
func decodeJSON(w http.ResponseWriter, data []byte, obj any, directive fieldValidation, strict []error, prefix string) error {
	more, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return apierrors.NewBadRequest(prefix + err.Error())
	}
	return reportStrict(w, append(strict, more...), directive, prefix)
}

// reportStrict turns unknown and duplicate fields into the error or the
// warnings fieldValidation asks for.
func reportStrict(w http.ResponseWriter, strict []error, directive fieldValidation, prefix string) error {
	if len(strict) == 0 {
		return nil
	}
	switch directive {
	case validationStrict:
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return apierrors.NewBadRequest(prefix + "strict decoding error: " + strings.Join(msgs, ", "))
	case validationWarn:
		for _, e := range strict {
			addWarning(w, e.Error())
		}
	}
	return nil
}

// addWarning adds an HTTP Warning header as kube-apiserver sends them.
func addWarning(w http.ResponseWriter, msg string) {
	w.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
}

// decodePrefix is how kube-apiserver starts the message of an object body
// it cannot decode.
func decodePrefix(rs *resource) string {
	return fmt.Sprintf("%s in version %q cannot be handled as a %s: ", rs.kind, rs.gv.version, rs.kind)
}
