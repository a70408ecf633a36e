package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRecoveryTurnsPanicIntoStatus(t *testing.T) {
	h := withLogging(withRecovery(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	})))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if rec.Code != 500 {
		t.Fatalf("code %d", rec.Code)
	}
	st := statusOf(t, rec.Body.String())
	if st.Reason != "InternalError" || !strings.Contains(st.Message, "boom") {
		t.Errorf("status %+v", st)
	}
}

func TestPretty(t *testing.T) {
	ts := newTestServer(t)
	tests := map[string]struct {
		query, agent string
		want         bool
	}{
		"pretty=true":            {query: "?pretty=true", want: true},
		"curl":                   {agent: "curl/8.0", want: true},
		"curl with pretty=false": {query: "?pretty=false", agent: "curl/8.0"},
		"kubectl":                {agent: "kubectl/v1.32.4"},
		"pretty=1":               {query: "?pretty=1", want: true},
		"pretty=T":               {query: "?pretty=T", want: true},
		"pretty=nonsense":        {query: "?pretty=nonsense", agent: "curl/8.0"},
		"browser":                {agent: "Mozilla/5.0 (X11)", want: true},
		"wget":                   {agent: "Wget/1.21", want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, "GET", "/api"+tc.query, "", "User-Agent: "+tc.agent)
			if got := strings.Contains(r.body, "\n  "); got != tc.want {
				t.Errorf("indented = %v, want %v: %q", got, tc.want, r.body)
			}
		})
	}
}
