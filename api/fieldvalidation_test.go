package api

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldValidation(t *testing.T) {
	const yamlJob = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: a\n  name: a\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: busybox}]\n"
	type request struct {
		method, path, body string
		headers            []string
	}
	tests := map[string]struct {
		setup    bool // create job a first
		req      request
		problems []string // unknown or duplicate fields, as kube words them
	}{
		"create, unknown field": {
			req:      request{"POST", jobsPath, strings.Replace(jobJSON("a"), `"spec":{`, `"spec":{"foo":1,`, 1), nil},
			problems: []string{`unknown field "spec.foo"`},
		},
		"create, duplicate field": {
			req:      request{"POST", jobsPath, strings.Replace(jobJSON("a"), `"kind":"Job"`, `"kind":"Job","kind":"Job"`, 1), nil},
			problems: []string{`duplicate field "kind"`},
		},
		"create, unknown and duplicate": {
			req:      request{"POST", jobsPath, strings.Replace(jobJSON("a"), `"spec":{`, `"spec":{"parallelism":1,"bar":2,"parallelism":1,`, 1), nil},
			problems: []string{`unknown field "spec.bar"`, `duplicate field "spec.parallelism"`},
		},
		"create YAML, duplicate field": {
			req:      request{"POST", jobsPath, yamlJob, []string{"Content-Type: application/yaml"}},
			problems: []string{"yaml: unmarshal errors:\n  line 5: key \"name\" already set in map"},
		},
		"update, unknown field": {
			setup:    true,
			req:      request{"PUT", jobsPath + "/a", "stored", nil},
			problems: []string{`unknown field "metadata.foo"`},
		},
		"merge patch, unknown field": {
			setup:    true,
			req:      request{"PATCH", jobsPath + "/a", `{"spec":{"foo":1}}`, []string{mergePatch}},
			problems: []string{`unknown field "spec.foo"`},
		},
		"merge patch, duplicate field": {
			setup:    true,
			req:      request{"PATCH", jobsPath + "/a", `{"metadata":{"labels":{"a":"1","a":"2"}}}`, []string{mergePatch}},
			problems: []string{`duplicate field "metadata.labels.a"`},
		},
		"strategic patch, unknown field": {
			setup:    true,
			req:      request{"PATCH", jobsPath + "/a", `{"spec":{"foo":1}}`, []string{"Content-Type: application/strategic-merge-patch+json"}},
			problems: []string{`unknown field "spec.foo"`},
		},
		"json patch, unknown field": {
			setup:    true,
			req:      request{"PATCH", jobsPath + "/a", `[{"op":"add","path":"/spec/foo","value":1}]`, []string{"Content-Type: application/json-patch+json"}},
			problems: []string{`unknown field "spec.foo"`},
		},
	}
	for name, tc := range tests {
		for _, directive := range []string{"Strict", "Warn", "Ignore", ""} {
			t.Run(name+"/"+directive, func(t *testing.T) {
				ts := newTestServer(t)
				if tc.setup {
					ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
				}
				path := tc.req.path
				if directive != "" {
					path += "?fieldValidation=" + directive
				}
				body := tc.req.body
				if body == "stored" {
					stored := ts.mustDo(t, "GET", jobsPath+"/a", "").body
					body = strings.Replace(stored, `"metadata":{`, `"metadata":{"foo":1,`, 1)
				}
				r := ts.do(t, tc.req.method, path, body, tc.req.headers...)
				if directive == "Strict" {
					st := statusOf(t, r.body)
					want := "strict decoding error: " + strings.Join(tc.problems, ", ")
					if r.code != 400 || st.Reason != metav1.StatusReasonBadRequest || !strings.HasSuffix(st.Message, want) {
						t.Errorf("got %d %s %q, want 400 BadRequest ending %q", r.code, st.Reason, st.Message, want)
					}
					return
				}
				if r.code >= 300 {
					t.Fatalf("got %d %s", r.code, r.body)
				}
				var want []string
				if directive != "Ignore" {
					for _, p := range tc.problems {
						want = append(want, `299 - `+strconvQuote(p))
					}
				}
				if diff := cmp.Diff(want, r.header.Values("Warning")); diff != "" {
					t.Errorf("Warning headers (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// strconvQuote quotes as the Warning header does (Go's %q).
func strconvQuote(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(`"`+strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`)+`"`, "\n", `\n`), "\t", `\t`))
}
