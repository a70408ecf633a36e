package api

import (
	"fmt"
	"net/http"

	"github.com/sirupsen/logrus"
)

// health serves /healthz and /livez: the process answers.
func (s *server) health(w http.ResponseWriter, r *http.Request) {
	writeText(w, http.StatusOK, "ok")
}

// ready serves /readyz: 200 "ok" once cfg.Ready says so, else 503.
func (s *server) ready(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(r.Context()); err != nil {
			logrus.WithError(err).Debug("not ready")
			writeText(w, http.StatusServiceUnavailable, fmt.Sprintf("[-]ready failed: %v\nreadyz check failed", err))
			return
		}
	}
	writeText(w, http.StatusOK, "ok")
}

// version serves /version.
func (s *server) version(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, s.cfg.Version)
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = fmt.Fprint(w, text)
}
