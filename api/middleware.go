package api

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/sirupsen/logrus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// recorder remembers the status code written through it and keeps the
// underlying writer's Flush for streams.
type recorder struct {
	http.ResponseWriter
	code int
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush flushes the underlying writer if it can.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// withLogging logs every request at Debug level (server errors at Warn):
// who asked (requestUser), the verb and resource as authorization sees
// them, the answer's code and how long it took.
func withLogging(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		r = withUserSlot(r)
		next.ServeHTTP(rec, r)
		info := parseRequestInfo(r)
		fields := logrus.Fields{
			"user":     requestUser(r).Username,
			"verb":     info.Verb,
			"uri":      r.URL.RequestURI(),
			"code":     rec.code,
			"duration": time.Since(start).String(),
		}
		if info.IsResource {
			fields["resource"] = info.resourceName()
			for k, v := range map[string]string{"group": info.APIGroup, "namespace": info.Namespace, "name": info.Name} {
				if v != "" {
					fields[k] = v
				}
			}
		}
		entry := logrus.WithFields(fields)
		if rec.code >= 500 {
			entry.Warn("request failed")
			return
		}
		entry.Debug("request")
	})
}

// withRecovery turns a panicking handler into a logged 500 Status.
func withRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			logrus.WithFields(logrus.Fields{"method": r.Method, "uri": r.URL.RequestURI()}).
				Errorf("handler panic: %v\n%s", v, debug.Stack())
			writeError(w, r, apierrors.NewInternalError(fmt.Errorf("handler panic: %v", v)))
		}()
		next.ServeHTTP(w, r)
	})
}
