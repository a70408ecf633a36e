package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/skiff-sh/skiff/db"
)

// TestHealthChecks: /readyz, /livez and /healthz answer as kube-apiserver's
// healthz handlers do, with the store's checks and the daemon's.
func TestHealthChecks(t *testing.T) {
	store, err := db.Open(filepath.Join(t.TempDir(), "skiff.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var containerd error
	h := New(Config{Store: store, ReadyChecks: []Check{{Name: "containerd", Check: func(context.Context) error { return containerd }}}})
	tests := map[string]struct {
		path       string
		containerd error
		wantCode   int
		wantBody   string
	}{
		"ready": {path: "/readyz", wantCode: 200, wantBody: "ok"},
		"ready verbose": {path: "/readyz?verbose", wantCode: 200,
			wantBody: "[+]ping ok\n[+]store ok\n[+]storage ok\n[+]containerd ok\nreadyz check passed\n"},
		"not ready, reason withheld": {path: "/readyz", containerd: errors.New("dial: refused"), wantCode: 500,
			wantBody: "[+]ping ok\n[+]store ok\n[+]storage ok\n[-]containerd failed: reason withheld\nreadyz check failed\n"},
		"one check, failing": {path: "/readyz/containerd", containerd: errors.New("dial: refused"), wantCode: 500,
			wantBody: "internal server error: dial: refused\n"},
		"one check, passing": {path: "/readyz/storage", wantCode: 200, wantBody: "ok"},
		"excluded": {path: "/readyz?verbose&exclude=containerd&exclude=nope", containerd: errors.New("dial: refused"), wantCode: 200,
			wantBody: "[+]ping ok\n[+]store ok\n[+]storage ok\n[+]containerd excluded: ok\n" +
				"warn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check passed\n"},
		"live without containerd": {path: "/livez?verbose", containerd: errors.New("dial: refused"), wantCode: 200,
			wantBody: "[+]ping ok\n[+]store ok\nlivez check passed\n"},
		"healthz": {path: "/healthz", containerd: errors.New("dial: refused"), wantCode: 200, wantBody: "ok"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			containerd = tc.containerd
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if diff := cmp.Diff([]any{tc.wantCode, tc.wantBody}, []any{rec.Code, rec.Body.String()}); diff != "" {
				t.Errorf("GET %s (-want,+got):\n%s", tc.path, diff)
			}
		})
	}
}

// TestNoSpaceIsInsufficientStorage: a write the full disk refused is a 507
// Status with kube-apiserver's shape for a full etcd.
func TestNoSpaceIsInsufficientStorage(t *testing.T) {
	err := errors.Join(errors.New("creating pods \"p\""), db.ErrNoSpace)
	st := statusFor(err, schema.GroupResource{Resource: "pods"}, "p").ErrStatus
	if st.Code != http.StatusInsufficientStorage || st.Reason != "" || st.Status != "Failure" || st.Message != err.Error() {
		t.Errorf("status %+v: want 507, no reason, the error as message", st)
	}
}
