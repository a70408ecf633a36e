package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/gorilla/mux"
	"github.com/sirupsen/logrus"

	"github.com/skiff-sh/skiff/db"
)

// Check is one named health check of /readyz, /livez or /healthz, as
// kube-apiserver's healthz.HealthChecker: nil means healthy.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// pingCheck always passes: the process answers (kube's "ping").
var pingCheck = Check{Name: "ping", Check: func(context.Context) error { return nil }}

// storeCheck passes while the store answers reads, as kube-apiserver's
// "etcd" check does for etcd.
func (s *server) storeCheck() Check {
	return Check{Name: "store", Check: func(context.Context) error {
		return s.store.Read(func(*db.Tx) error { return nil })
	}}
}

// storageCheck fails while the store's disk refuses writes (it is full),
// and passes again by itself once it takes them.
func (s *server) storageCheck() Check {
	return Check{Name: "storage", Check: func(context.Context) error {
		return s.store.Writable()
	}}
}

// liveChecks serve /livez and /healthz: the process and its store work.
// A full disk does not fail them: restarting skiffd would not free it.
func (s *server) liveChecks() []Check {
	checks := []Check{pingCheck}
	if s.store != nil {
		checks = append(checks, s.storeCheck())
	}
	return checks
}

// readyChecks serve /readyz: the live checks, the store's disk, and the
// daemon's own (containerd).
func (s *server) readyChecks() []Check {
	checks := s.liveChecks()
	if s.store != nil {
		checks = append(checks, s.storageCheck())
	}
	return append(checks, s.cfg.ReadyChecks...)
}

// healthRoutes registers /<name> and /<name>/<check> for each check.
func (s *server) healthRoutes(r *mux.Router, name string, checks []Check) {
	r.HandleFunc("/"+name, healthHandler(name, checks))
	for _, c := range checks {
		r.HandleFunc("/"+name+"/"+c.Name, checkHandler(c))
	}
}

// healthHandler runs the checks as kube-apiserver's healthz handler does:
// "ok" when they pass (with ?verbose, one "[+]<check> ok" line each and
// "<name> check passed"); when one fails, always the list, the failed one
// as "[-]<check> failed: reason withheld", and "<name> check failed" with
// code 500. ?exclude=<check> skips a check. The reasons go to the log.
func healthHandler(name string, checks []Check) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		excluded := r.URL.Query()["exclude"]
		var out, reasons bytes.Buffer
		failed := false
		for _, c := range checks {
			if slices.Contains(excluded, c.Name) {
				fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.Name)
				excluded = slices.DeleteFunc(excluded, func(n string) bool { return n == c.Name })
				continue
			}
			if err := c.Check(r.Context()); err != nil {
				// NOTE: kube withholds the reason: these endpoints are anonymous.
				fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.Name)
				fmt.Fprintf(&reasons, "[-]%s failed: %v\n", c.Name, err)
				failed = true
				continue
			}
			fmt.Fprintf(&out, "[+]%s ok\n", c.Name)
		}
		if len(excluded) > 0 {
			slices.Sort(excluded)
			fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", quoted(excluded))
		}
		if failed {
			logrus.Infof("%s check failed:\n%s", name, reasons.String())
			http.Error(w, fmt.Sprintf("%s%s check failed", out.String(), name), http.StatusInternalServerError)
			return
		}
		if _, verbose := r.URL.Query()["verbose"]; !verbose {
			writeText(w, http.StatusOK, "ok")
			return
		}
		writeText(w, http.StatusOK, fmt.Sprintf("%s%s check passed\n", out.String(), name))
	}
}

// checkHandler serves one check at /<name>/<check>, as kube does: "ok",
// or the reason with code 500.
func checkHandler(c Check) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := c.Check(r.Context()); err != nil {
			http.Error(w, fmt.Sprintf("internal server error: %v", err), http.StatusInternalServerError)
			return
		}
		writeText(w, http.StatusOK, "ok")
	}
}

// quoted formats names as kube's formatQuoted: "a","b".
func quoted(names []string) string {
	var b bytes.Buffer
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q", n)
	}
	return b.String()
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
