package api

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultRequestTimeout is kube-apiserver's --request-timeout: how long a
// request that is not long-running may take.
const DefaultRequestTimeout = 60 * time.Second

// withRequestTimeout bounds the time a request that is not long-running
// takes to send its body and to read the response: its connection's read
// deadline (while the body arrives) is set timeout ahead and its write
// deadline twice that, so a slow client is cut off instead of holding a
// connection and a handler for ever. Long-running requests (watches, logs, exec, attach,
// port-forward, proxy, image import) get no deadline.
//
// NOTE: kube-apiserver's WithTimeoutForNonLongRunningRequests answers 504
// Timeout after --request-timeout (60s) for every request that its
// BasicLongRunningRequestCheck does not call long-running, and then closes
// the connection; its http.Server has no read or write timeout. Here the
// deadline is on the connection, so the body read fails (answered with the
// same 504 Status, see bodyTimeout) and a response nobody reads ends.
func withRequestTimeout(timeout time.Duration, next http.Handler) http.Handler {
	if timeout <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if isLongRunning(r) {
			// NOTE: net/http resets the read deadline for each request, but
			// not the write deadline: an earlier request on the same
			// connection may have left one.
			_ = rc.SetWriteDeadline(time.Time{})
			next.ServeHTTP(w, r)
			return
		}
		deadline := time.Now().Add(timeout)
		// The response, a timeout Status included, gets as long again.
		_ = rc.SetWriteDeadline(deadline.Add(timeout))
		if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
			// Only while the body arrives: once it is read, net/http reads on
			// in the background to see the client go away, and a read
			// deadline there would cancel the request.
			_ = rc.SetReadDeadline(deadline)
			r.Body = &deadlineBody{ReadCloser: r.Body, clear: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the read deadline once the body is read.
type deadlineBody struct {
	io.ReadCloser
	clear func()
	done  bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		b.clear()
	}
	return n, err
}

// bodyTimeout is the error of a body that did not arrive in time: kube's
// 504 Timeout Status for a request that did not complete in time.
func bodyTimeout(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)
	}
	return nil
}

// longRunningSubresources are the pod subresources that stream, as
// kube-apiserver's BasicLongRunningRequestCheck lists them.
var longRunningSubresources = map[string]bool{"attach": true, "exec": true, "log": true, "portforward": true, "proxy": true}

// isLongRunning reports whether r streams: a watch (?watch=true or a
// /watch/ path), a streaming pod subresource, the image import, whose
// body is a whole image, or a backup, whose answer is the whole store.
func isLongRunning(r *http.Request) bool {
	if (r.URL.Path == ImagesPath && r.Method == http.MethodPost) || r.URL.Path == BackupPath {
		return true
	}
	if isWatchParam(r) {
		return true
	}
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(seg) > 2 && seg[0] == "api" && seg[2] == "watch",
		len(seg) > 3 && seg[0] == "apis" && seg[3] == "watch":
		return true
	case len(seg) >= 3 && seg[len(seg)-3] == "pods" && longRunningSubresources[seg[len(seg)-1]]:
		return true
	}
	return false
}
