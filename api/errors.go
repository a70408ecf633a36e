package api

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/kubelet/streaming"
)

// statusFor is the one place where errors become API Status errors: an
// error that already is one is kept, the store's sentinels map to their
// Kubernetes reasons (for the resource gr and object name), anything else
// is an InternalError.
func statusFor(err error, gr schema.GroupResource, name string) *apierrors.StatusError {
	var se *apierrors.StatusError
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, db.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, db.ErrAlreadyExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, db.ErrConflict):
		// NOTE: kube-apiserver's wording for a stale resourceVersion.
		return apierrors.NewConflict(gr, name, errors.New("the object has been modified; please apply your changes to the latest version and try again"))
	case errors.Is(err, db.ErrExpired):
		return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %v", err))
	case errors.Is(err, db.ErrTooNew):
		return tooLargeResourceVersion(fmt.Sprintf("Too large resource version: %v", err))
	case errors.Is(err, db.ErrTooSlow):
		// NOTE: a 410 makes clients (client-go's reflector) relist and watch again.
		return apierrors.NewResourceExpired(fmt.Sprintf("watch ended: %v", err))
	case errors.Is(err, db.ErrClosed):
		return apierrors.NewServiceUnavailable("the store is closed")
	case errors.Is(err, db.ErrNoSpace):
		return insufficientStorage(err)
	default:
		return apierrors.NewInternalError(err)
	}
}

// insufficientStorage is the Status of a write that the store's full disk
// refused: 507 Insufficient Storage, the store's error as message (it
// names the store's file and the system's "no space left on device").
//
// NOTE: kube-apiserver passes a write that etcd refuses for lack of space
// ("etcdserver: mvcc: database space exceeded") through as it is: a Status
// with code 500, reason Unknown ("") and the storage error as message.
// apimachinery has no StatusReason for 507 (its client side calls any 5xx
// without a reason InternalError), so this is kube-apiserver's shape for a
// full etcd with the code that names the condition, telling clients that
// the same request may succeed once space is freed.
func insufficientStorage(err error) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInsufficientStorage,
		Reason:  metav1.StatusReasonUnknown,
		Message: err.Error(),
	}}
}

// writeError writes err as a metav1.Status with its HTTP code.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	if re := (*streaming.RefusalError)(nil); errors.As(err, &re) {
		// NOTE: the kubelet's answer, which kube-apiserver passes on as it
		// came: the text alone.
		code := re.Code
		if code == 0 {
			code = http.StatusInternalServerError
		}
		http.Error(w, re.Message, code)
		return
	}
	st := statusFor(err, schema.GroupResource{}, "").ErrStatus
	writeStatus(w, r, &st)
}

// writeStatus writes a Status object with the code it carries.
func writeStatus(w http.ResponseWriter, r *http.Request, st *metav1.Status) {
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	writeJSON(w, r, code, st)
}

// notFound answers paths that no route serves, as kube-apiserver does.
func notFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
			Type: metav1.CauseTypeUnexpectedServerResponse, Message: "404 page not found",
		}}},
	}})
}

// methodNotSupported is the 405 for a method a resource path does not serve.
func methodNotSupported(gr schema.GroupResource, method string) error {
	return apierrors.NewMethodNotSupported(gr, method)
}
