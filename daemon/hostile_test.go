//go:build integration

package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	hostileJobs = "/apis/batch/v1/namespaces/default/jobs"
	hostilePods = "/api/v1/namespaces/default/pods"
	// maxBody is kube-apiserver's limit on request bodies (3 MiB).
	maxBody = 3 << 20
)

// hostileRequest is one request of the sweep.
type hostileRequest struct {
	method, path, contentType string
	body                      string
}

// send sends the request and returns its status code and body.
func (s *skiffd) send(t *testing.T, r hostileRequest) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(r.method, s.url(r.path), strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

// hostileFixtures creates the Job "j" (left alone by the Job controller)
// and the running Pod "p", and returns their JSON as stored.
func hostileFixtures(t *testing.T, s *skiffd) (job, pod []byte) {
	t.Helper()
	ctx := context.Background()
	j := suspendedJob("j")
	j.Spec.ManagedBy = ptr(otherManager)
	created, err := s.client.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.client.CoreV1().Pods("default").Create(ctx, sleepPod("p"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.APIVersion, created.Kind = "batch/v1", "Job"
	p.APIVersion, p.Kind = "v1", "Pod"
	job, _ = json.Marshal(created)
	pod, _ = json.Marshal(p)
	return job, pod
}

// withStaleRV is obj's JSON with resourceVersion "1" (long replaced).
func withStaleRV(t *testing.T, obj []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatal(err)
	}
	m["metadata"].(map[string]any)["resourceVersion"] = "1"
	out, _ := json.Marshal(m)
	return string(out)
}

// TestHostileInput: malformed and hostile requests against a real skiffd
// get kube-apiserver's status code and reason, as a metav1.Status.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	jobJSON, podJSON := hostileFixtures(t, s)
	const (
		json_   = "application/json"
		merge   = "application/merge-patch+json"
		smp     = "application/strategic-merge-patch+json"
		jsonp   = "application/json-patch+json"
		applyCT = "application/apply-patch+yaml"
	)
	long := strings.Repeat("a", 300)
	newJob := func(name string) string {
		return `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`
	}
	newPod := func(name string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `"},"spec":{"containers":[{"name":"c","image":"busybox:1.35"}]}}`
	}
	tooManyOps := "[" + strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"/kind","value":"Job"},`, 10001), ",") + "]"
	tests := map[string]struct {
		req        hostileRequest
		wantCode   int
		wantReason metav1.StatusReason
	}{
		// Bodies that are not the object.
		"job: bad JSON":              {hostileRequest{"POST", hostileJobs, json_, `{"metadata":`}, 400, metav1.StatusReasonBadRequest},
		"pod: bad JSON":              {hostileRequest{"POST", hostilePods, json_, `{"spec":{`}, 400, metav1.StatusReasonBadRequest},
		"job: an array":              {hostileRequest{"POST", hostileJobs, json_, `[]`}, 400, metav1.StatusReasonBadRequest},
		"job: a field of wrong type": {hostileRequest{"POST", hostileJobs, json_, strings.Replace(newJob("w"), `"spec":{`, `"spec":{"parallelism":"x",`, 1)}, 400, metav1.StatusReasonBadRequest},
		"job: another kind":          {hostileRequest{"POST", hostileJobs, json_, newPod("k")}, 400, metav1.StatusReasonBadRequest},
		"job: deep nesting":          {hostileRequest{"POST", hostileJobs, json_, strings.Repeat("[", 100000) + strings.Repeat("]", 100000)}, 400, metav1.StatusReasonBadRequest},
		"job: not protobuf":          {hostileRequest{"POST", hostileJobs, "application/vnd.kubernetes.protobuf", newJob("pb")}, 400, metav1.StatusReasonBadRequest},
		"job: text/plain":            {hostileRequest{"POST", hostileJobs, "text/plain", newJob("t")}, 415, metav1.StatusReasonUnsupportedMediaType},
		"pod: application/xml":       {hostileRequest{"POST", hostilePods, "application/xml", newPod("x")}, 415, metav1.StatusReasonUnsupportedMediaType},
		"pod: PUT as text/plain":     {hostileRequest{"PUT", hostilePods + "/p", "text/plain", string(podJSON)}, 415, metav1.StatusReasonUnsupportedMediaType},
		// Unknown and duplicate fields under fieldValidation=Strict.
		"job: unknown field, Strict":            {hostileRequest{"POST", hostileJobs + "?fieldValidation=Strict", json_, strings.Replace(newJob("u"), `"spec":{`, `"spec":{"bogus":1,`, 1)}, 400, metav1.StatusReasonBadRequest},
		"pod: unknown field, Strict":            {hostileRequest{"POST", hostilePods + "?fieldValidation=Strict", json_, strings.Replace(newPod("u"), `"spec":{`, `"spec":{"bogus":1,`, 1)}, 400, metav1.StatusReasonBadRequest},
		"job: duplicate field, Strict":          {hostileRequest{"POST", hostileJobs + "?fieldValidation=Strict", json_, strings.Replace(newJob("d"), `"kind":"Job"`, `"kind":"Job","kind":"Job"`, 1)}, 400, metav1.StatusReasonBadRequest},
		"pod: unknown field in a patch, Strict": {hostileRequest{"PATCH", hostilePods + "/p?fieldValidation=Strict", merge, `{"spec":{"bogus":1}}`}, 400, metav1.StatusReasonBadRequest},
		"job: bad fieldValidation":              {hostileRequest{"POST", hostileJobs + "?fieldValidation=Loud", json_, newJob("v")}, 422, metav1.StatusReasonInvalid},
		// Names.
		"job: a name of 300 characters": {hostileRequest{"POST", hostileJobs, json_, newJob(long)}, 422, metav1.StatusReasonInvalid},
		"pod: a name of 300 characters": {hostileRequest{"POST", hostilePods, json_, newPod(long)}, 422, metav1.StatusReasonInvalid},
		"pod: an uppercase name":        {hostileRequest{"POST", hostilePods, json_, newPod("Upper")}, 422, metav1.StatusReasonInvalid},
		"job: a NUL in the name":        {hostileRequest{"POST", hostileJobs, json_, newJob(`a\u0000b`)}, 422, metav1.StatusReasonInvalid},
		"get: a name of 300 characters": {hostileRequest{"GET", hostileJobs + "/" + long, "", ""}, 404, metav1.StatusReasonNotFound},
		"job: a namespace that is not":  {hostileRequest{"POST", "/apis/batch/v1/namespaces/nope/jobs", json_, newJob("n")}, 404, metav1.StatusReasonNotFound},
		// Patches that do not apply.
		"job: merge patch of the wrong type":     {hostileRequest{"PATCH", hostileJobs + "/j", merge, `{"spec":{"parallelism":"x"}}`}, 422, metav1.StatusReasonInvalid},
		"job: strategic patch of the wrong type": {hostileRequest{"PATCH", hostileJobs + "/j", smp, `{"spec":{"parallelism":"x"}}`}, 422, metav1.StatusReasonInvalid},
		"job: strategic patch not an object":     {hostileRequest{"PATCH", hostileJobs + "/j", smp, `[1]`}, 400, metav1.StatusReasonBadRequest},
		"job: merge patch not JSON":              {hostileRequest{"PATCH", hostileJobs + "/j", merge, `{`}, 400, metav1.StatusReasonBadRequest},
		"job: json patch not a list":             {hostileRequest{"PATCH", hostileJobs + "/j", jsonp, `{}`}, 400, metav1.StatusReasonBadRequest},
		"job: json patch of a missing path":      {hostileRequest{"PATCH", hostileJobs + "/j", jsonp, `[{"op":"remove","path":"/spec/nothing/here"}]`}, 422, metav1.StatusReasonInvalid},
		"job: json patch with a failing test":    {hostileRequest{"PATCH", hostileJobs + "/j", jsonp, `[{"op":"test","path":"/spec/parallelism","value":99}]`}, 422, metav1.StatusReasonInvalid},
		"job: json patch of an unknown op":       {hostileRequest{"PATCH", hostileJobs + "/j", jsonp, `[{"op":"frob","path":"/spec"}]`}, 422, metav1.StatusReasonInvalid},
		"job: json patch of 10001 operations":    {hostileRequest{"PATCH", hostileJobs + "/j", jsonp, tooManyOps}, 413, metav1.StatusReasonRequestEntityTooLarge},
		"job: patch as application/json":         {hostileRequest{"PATCH", hostileJobs + "/j", json_, `{}`}, 415, metav1.StatusReasonUnsupportedMediaType},
		"job: apply without a field manager":     {hostileRequest{"PATCH", hostileJobs + "/j", applyCT, "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n"}, 422, metav1.StatusReasonInvalid},
		"pod: a change kube forbids":             {hostileRequest{"PATCH", hostilePods + "/p", merge, `{"spec":{"restartPolicy":"Never"}}`}, 422, metav1.StatusReasonInvalid},
		"pod: a container added":                 {hostileRequest{"PATCH", hostilePods + "/p", smp, `{"spec":{"containers":[{"name":"extra","image":"busybox:1.35"}]}}`}, 422, metav1.StatusReasonInvalid},
		// Stale resourceVersions and failed preconditions.
		"job: PUT of a stale resourceVersion":        {hostileRequest{"PUT", hostileJobs + "/j", json_, withStaleRV(t, jobJSON)}, 409, metav1.StatusReasonConflict},
		"pod: PUT of a stale resourceVersion":        {hostileRequest{"PUT", hostilePods + "/p", json_, withStaleRV(t, podJSON)}, 409, metav1.StatusReasonConflict},
		"pod: status PUT of a stale resourceVersion": {hostileRequest{"PUT", hostilePods + "/p/status", json_, withStaleRV(t, podJSON)}, 409, metav1.StatusReasonConflict},
		"job: patch of a stale resourceVersion":      {hostileRequest{"PATCH", hostileJobs + "/j", merge, `{"metadata":{"resourceVersion":"1"}}`}, 409, metav1.StatusReasonConflict},
		"job: DELETE, stale precondition":            {hostileRequest{"DELETE", hostileJobs + "/j", json_, `{"preconditions":{"resourceVersion":"1"}}`}, 409, metav1.StatusReasonConflict},
		"job: DELETE, wrong uid precondition":        {hostileRequest{"DELETE", hostileJobs + "/j", json_, `{"preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`}, 409, metav1.StatusReasonConflict},
		"job: DELETE with a bad body":                {hostileRequest{"DELETE", hostileJobs + "/j", json_, `{`}, 400, metav1.StatusReasonBadRequest},
		// Oversized bodies.
		"job: oversized POST":  {hostileRequest{"POST", hostileJobs, json_, newJob(strings.Repeat("a", maxBody))}, 413, metav1.StatusReasonRequestEntityTooLarge},
		"job: oversized PUT":   {hostileRequest{"PUT", hostileJobs + "/j", json_, newJob(strings.Repeat("a", maxBody))}, 413, metav1.StatusReasonRequestEntityTooLarge},
		"pod: oversized PATCH": {hostileRequest{"PATCH", hostilePods + "/p", merge, `{"metadata":{"annotations":{"a":"` + strings.Repeat("a", maxBody) + `"}}}`}, 413, metav1.StatusReasonRequestEntityTooLarge},
		// Selectors.
		"jobs: bad label selector":       {hostileRequest{"GET", hostileJobs + "?labelSelector=a%20in%20(", "", ""}, 400, metav1.StatusReasonBadRequest},
		"pods: bad field selector":       {hostileRequest{"GET", hostilePods + "?fieldSelector=a", "", ""}, 400, metav1.StatusReasonBadRequest},
		"pods: unsupported field":        {hostileRequest{"GET", hostilePods + "?fieldSelector=spec.foo%3Dx", "", ""}, 400, metav1.StatusReasonBadRequest},
		"jobs: pods' field on jobs":      {hostileRequest{"GET", hostileJobs + "?fieldSelector=status.phase%3DRunning", "", ""}, 400, metav1.StatusReasonBadRequest},
		"watch pods: bad label selector": {hostileRequest{"GET", hostilePods + "?watch=1&labelSelector=%21%21", "", ""}, 400, metav1.StatusReasonBadRequest},
		// resourceVersion and paging parameters.
		"jobs: resourceVersion=abc":             {hostileRequest{"GET", hostileJobs + "?resourceVersion=abc", "", ""}, 400, metav1.StatusReasonBadRequest},
		"pods: resourceVersion=-1":              {hostileRequest{"GET", hostilePods + "?resourceVersion=-1", "", ""}, 400, metav1.StatusReasonBadRequest},
		"get job: resourceVersion=abc":          {hostileRequest{"GET", hostileJobs + "/j?resourceVersion=abc", "", ""}, 400, metav1.StatusReasonBadRequest},
		"watch jobs: resourceVersion=abc":       {hostileRequest{"GET", hostileJobs + "?watch=1&resourceVersion=abc", "", ""}, 400, metav1.StatusReasonBadRequest},
		"jobs: resourceVersionMatch without RV": {hostileRequest{"GET", hostileJobs + "?resourceVersionMatch=Exact", "", ""}, 422, metav1.StatusReasonInvalid},
		"jobs: continue and resourceVersion":    {hostileRequest{"GET", hostileJobs + "?continue=abc&resourceVersion=5", "", ""}, 400, metav1.StatusReasonBadRequest},
		"jobs: garbage continue":                {hostileRequest{"GET", hostileJobs + "?continue=%21%21%21", "", ""}, 400, metav1.StatusReasonBadRequest},
		"watch pods: timeoutSeconds=abc":        {hostileRequest{"GET", hostilePods + "?watch=1&timeoutSeconds=abc", "", ""}, 400, metav1.StatusReasonBadRequest},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, body := s.send(t, tc.req)
			st := decodeStatus(t, code, body)
			if code != tc.wantCode || st.Reason != tc.wantReason {
				t.Errorf("got %d %s, want %d %s: %s", code, st.Reason, tc.wantCode, tc.wantReason, st.Message)
			}
		})
	}
	// Nothing above may have changed the fixtures.
	job, err := s.client.BatchV1().Jobs("default").Get(context.Background(), "j", metav1.GetOptions{})
	if err != nil || *job.Spec.Parallelism != 1 {
		t.Errorf("job j after the sweep: %v, %+v", err, job)
	}
}

// decodeStatus decodes an error response's body as a metav1.Status whose
// code is the response's.
func decodeStatus(t *testing.T, code int, body []byte) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("%d with a body that is not a Status: %.300s", code, body)
	}
	if int(st.Code) != code {
		t.Errorf("Status code %d in a %d response", st.Code, code)
	}
	return st
}

// TestHostileInputNever5xx throws combinations of methods, paths, content
// types and bodies at a real skiffd: no answer may be a 5xx, and every
// error is a metav1.Status.
func TestHostileInputNever5xx(t *testing.T) {
	t.Parallel()
	s := newSkiffd(t)
	s.start()
	hostileFixtures(t, s)
	rnd := rand.New(rand.NewSource(4))
	garbage := make([]byte, 512)
	rnd.Read(garbage)
	paths := []string{
		hostileJobs, hostileJobs + "/j", hostileJobs + "/j/status", hostileJobs + "?limit=1",
		hostilePods, hostilePods + "/p", hostilePods + "/p/status", hostilePods + "/p/log", hostilePods + "/p/log?container=nope",
		hostilePods + "/p/ephemeralcontainers", "/api/v1/namespaces", "/api/v1/nodes",
		"/apis/batch/v1/jobs?fieldSelector=metadata.name%3Dj", "/api/v1/pods?labelSelector=x%3Dy",
	}
	bodies := []string{
		"", "{", "[]", "null", "0", `"s"`, string(garbage),
		`{"metadata":{"name":"j"}}`, `{"metadata":{"name":"p"}}`, `{"apiVersion":"v1","kind":"Status"}`,
		`{"metadata":{"name":"` + strings.Repeat("x", 300) + `","resourceVersion":"x"}}`,
		`[{"op":"add","path":"/metadata/labels/a","value":"b"}]`, `[{"op":"move","from":"/spec","path":"/status"}]`,
		"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n", "\x00\x01\x02",
		`{"spec":{"containers":null,"template":null,"parallelism":-5}}`,
	}
	contentTypes := []string{
		"", "application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
		"application/merge-patch+json", "application/strategic-merge-patch+json", "application/json-patch+json",
		"application/apply-patch+yaml", "text/plain", "application/json; charset=utf-8", "multipart/form-data; boundary=x",
	}
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	n := 0
	for _, m := range methods {
		for _, p := range paths {
			for _, ct := range contentTypes {
				for _, b := range bodies {
					if m == "GET" && (ct != "" || b != "") {
						continue
					}
					n++
					query := "?fieldManager=sweep"
					if strings.Contains(p, "?") {
						query = "&fieldManager=sweep"
					}
					code, body := s.send(t, hostileRequest{m, p + query, ct, b})
					if code >= 500 {
						t.Errorf("%s %s (%s) %.60q: %d %.300s", m, p, ct, b, code, body)
						continue
					}
					if code >= 400 {
						decodeStatus(t, code, body)
					}
				}
			}
		}
	}
	t.Logf("%d requests", n)
}
