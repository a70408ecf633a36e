package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// watchStream is an open watch response.
type watchStream struct {
	resp   *http.Response
	lines  chan string
	cancel context.CancelFunc
}

// openWatch starts a watch request and reads its event lines.
func (ts *testServer) openWatch(t *testing.T, path string, headers ...string) *watchStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	req, err := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		cancel()
		t.Fatalf("watch %s: code %d", path, resp.StatusCode)
	}
	ws := &watchStream{resp: resp, lines: make(chan string, 100), cancel: cancel}
	go func() {
		defer close(ws.lines)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			ws.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
	})
	return ws
}

// event is a decoded watch event: its type and the object's kind, name and
// resourceVersion.
type event struct {
	Type, Kind, Name, RV string
}

// next reads n events.
func (ws *watchStream) next(t *testing.T, n int) []event {
	t.Helper()
	var out []event
	for len(out) < n {
		line, ok := <-ws.lines
		if !ok {
			t.Fatalf("stream ended after %d events: %+v", len(out), out)
		}
		out = append(out, decodeEvent(t, line))
	}
	return out
}

// rest reads events until the stream ends.
func (ws *watchStream) rest(t *testing.T) []event {
	t.Helper()
	var out []event
	for line := range ws.lines {
		out = append(out, decodeEvent(t, line))
	}
	return out
}

func decodeEvent(t *testing.T, line string) event {
	t.Helper()
	var ev struct {
		Type   string
		Object struct {
			Kind     string
			Metadata metav1.ObjectMeta
			Rows     []struct{ Cells []any }
		}
	}
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatalf("decoding event %q: %v", line, err)
	}
	name := ev.Object.Metadata.Name
	if len(ev.Object.Rows) == 1 {
		name, _ = ev.Object.Rows[0].Cells[0].(string)
	}
	return event{Type: ev.Type, Kind: ev.Object.Kind, Name: name, RV: ev.Object.Metadata.ResourceVersion}
}

// mustDo fails the test unless the request succeeds.
func (ts *testServer) mustDo(t *testing.T, method, path, body string, headers ...string) response {
	t.Helper()
	r := ts.do(t, method, path, body, headers...)
	if r.code >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, r.code, r.body)
	}
	return r
}

func TestWatchFromNowListsFirst(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	ws := ts.openWatch(t, jobsPath+"?watch=true")
	got := ws.next(t, 1)
	ts.mustDo(t, "POST", jobsPath, jobJSON("b"))
	ts.mustDo(t, "PATCH", jobsPath+"/a", `{"spec":{"parallelism":2}}`, "Content-Type: application/merge-patch+json")
	ts.mustDo(t, "DELETE", jobsPath+"/b", `{"propagationPolicy":"Background"}`)
	got = append(got, ws.next(t, 3)...)
	want := []event{{"ADDED", "Job", "a", "1"}, {"ADDED", "Job", "b", "2"}, {"MODIFIED", "Job", "a", "3"}, {"DELETED", "Job", "b", "4"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestWatchResumesFromResourceVersion(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	ts.mustDo(t, "POST", jobsPath, jobJSON("b"))
	ts.mustDo(t, "PATCH", jobsPath+"/a", `{"spec":{"parallelism":2}}`, "Content-Type: application/merge-patch+json")
	ws := ts.openWatch(t, jobsPath+"?watch=1&resourceVersion=1")
	want := []event{{"ADDED", "Job", "b", "2"}, {"MODIFIED", "Job", "a", "3"}}
	if diff := cmp.Diff(want, ws.next(t, 2)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestWatchSelectorTransitions(t *testing.T) {
	ts := newTestServer(t)
	merge := "Content-Type: application/merge-patch+json"
	ts.mustDo(t, "POST", jobsPath, strings.Replace(jobJSON("a"), `"name":"a"`, `"name":"a","labels":{"team":"x"}`, 1)) // 1
	ts.mustDo(t, "POST", jobsPath, jobJSON("b"))                                                                       // 2
	all := ts.openWatch(t, jobsPath+"?watch=true&resourceVersion=2&labelSelector=team%3Dx")
	named := ts.openWatch(t, jobsPath+"?watch=true&resourceVersion=2&fieldSelector=metadata.name%3Da")
	ts.mustDo(t, "PATCH", jobsPath+"/b", `{"metadata":{"labels":{"team":"x"}}}`, merge) // 3: b enters
	ts.mustDo(t, "PATCH", jobsPath+"/a", `{"metadata":{"labels":{"team":"y"}}}`, merge) // 4: a leaves
	ts.mustDo(t, "POST", "/apis/batch/v1/namespaces/other/jobs", jobJSON("a"))          // 5: other namespace
	ts.mustDo(t, "DELETE", jobsPath+"/a", "")                                           // 6
	ts.mustDo(t, "PATCH", jobsPath+"/b", `{"metadata":{"labels":{"more":"1"}}}`, merge) // 7: b stays
	wantAll := []event{{"ADDED", "Job", "b", "3"}, {"DELETED", "Job", "a", "4"}, {"MODIFIED", "Job", "b", "7"}}
	if diff := cmp.Diff(wantAll, all.next(t, 3)); diff != "" {
		t.Errorf("label selector (-want,+got):\n%s", diff)
	}
	wantNamed := []event{{"MODIFIED", "Job", "a", "4"}, {"DELETED", "Job", "a", "6"}}
	if diff := cmp.Diff(wantNamed, named.next(t, 2)); diff != "" {
		t.Errorf("field selector (-want,+got):\n%s", diff)
	}
}

func TestWatchTimeoutAndBookmarks(t *testing.T) {
	old := bookmarkInterval
	bookmarkInterval = 200 * time.Millisecond
	t.Cleanup(func() { bookmarkInterval = old })
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	ws := ts.openWatch(t, jobsPath+"?watch=true&resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=1")
	got := ws.rest(t)
	if len(got) < 2 {
		t.Fatalf("want periodic bookmarks and one at the end, got %+v", got)
	}
	for _, ev := range got {
		if diff := cmp.Diff(event{"BOOKMARK", "Job", "", "1"}, ev); diff != "" {
			t.Errorf("(-want,+got):\n%s", diff)
		}
	}
}

func TestWatchWithoutBookmarksEndsAtTimeout(t *testing.T) {
	ts := newTestServer(t)
	ws := ts.openWatch(t, jobsPath+"?watch=true&timeoutSeconds=1")
	if got := ws.rest(t); len(got) != 0 {
		t.Errorf("events: %+v", got)
	}
}

func TestWatchTable(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	ws := ts.openWatch(t, jobsPath+"?watch=true&resourceVersion=0",
		"Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	ts.mustDo(t, "POST", jobsPath, jobJSON("b"))
	want := []event{{"ADDED", "Table", "a", "1"}, {"ADDED", "Table", "b", "2"}}
	if diff := cmp.Diff(want, ws.next(t, 2)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestWatchExpired(t *testing.T) {
	ts := newTestServer(t, db.WithChangeLogSize(1))
	for _, n := range []string{"a", "b", "c"} {
		ts.mustDo(t, "POST", jobsPath, jobJSON(n))
	}
	ws := ts.openWatch(t, jobsPath+"?watch=true&resourceVersion=1")
	line := <-ws.lines
	var ev metav1.WatchEvent
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	st := statusOf(t, string(ev.Object.Raw))
	if ev.Type != "ERROR" || st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Message != "too old resource version: 1 (2)" {
		t.Errorf("got %s, want an ERROR event with a 410 Expired Status", line)
	}
}

func TestListPagination(t *testing.T) {
	ts := newTestServer(t)
	for _, n := range []string{"a", "b", "c"} {
		ts.mustDo(t, "POST", jobsPath, jobJSON(n))
	}
	var names []string
	path := jobsPath + "?limit=2"
	for pages := 0; pages < 5; pages++ {
		var list struct {
			Metadata metav1.ListMeta
			Items    []struct{ Metadata metav1.ObjectMeta }
		}
		if err := json.Unmarshal([]byte(ts.mustDo(t, "GET", path, "").body), &list); err != nil {
			t.Fatal(err)
		}
		for _, it := range list.Items {
			names = append(names, it.Metadata.Name)
		}
		if list.Metadata.ResourceVersion != "3" {
			t.Errorf("list resourceVersion %q, want 3", list.Metadata.ResourceVersion)
		}
		if list.Metadata.Continue == "" {
			break
		}
		path = jobsPath + "?limit=2&continue=" + list.Metadata.Continue
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestWatchSendInitialEvents(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	ts.mustDo(t, "POST", jobsPath, jobJSON("b"))
	ws := ts.openWatch(t, jobsPath+"?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan")
	got := ws.next(t, 2)
	want := []event{{"ADDED", "Job", "a", "1"}, {"ADDED", "Job", "b", "2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	line := <-ws.lines
	if ev := decodeEvent(t, line); ev != (event{"BOOKMARK", "Job", "", "2"}) || !strings.Contains(line, `"k8s.io/initial-events-end":"true"`) {
		t.Errorf("want the initial-events-end bookmark, got %s", line)
	}
}

func TestDeprecatedWatchPaths(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))                                   // 1
	ts.mustDo(t, "POST", jobsPath, jobJSON("b"))                                   // 2
	ts.mustDo(t, "POST", "/apis/batch/v1/namespaces/other/jobs", jobJSON("c"))     // 3
	ts.mustDo(t, "PATCH", jobsPath+"/a", `{"spec":{"parallelism":2}}`, mergePatch) // 4
	tests := map[string]struct {
		path string
		want []event
	}{
		"all namespaces": {path: "/apis/batch/v1/watch/jobs?resourceVersion=1",
			want: []event{{"ADDED", "Job", "b", "2"}, {"ADDED", "Job", "c", "3"}, {"MODIFIED", "Job", "a", "4"}}},
		"one namespace": {path: "/apis/batch/v1/watch/namespaces/default/jobs?resourceVersion=1",
			want: []event{{"ADDED", "Job", "b", "2"}, {"MODIFIED", "Job", "a", "4"}}},
		"one object": {path: "/apis/batch/v1/watch/namespaces/default/jobs/a?resourceVersion=1",
			want: []event{{"MODIFIED", "Job", "a", "4"}}},
		"one object from now": {path: "/apis/batch/v1/watch/namespaces/default/jobs/b",
			want: []event{{"ADDED", "Job", "b", "2"}}},
		"pods": {path: "/api/v1/watch/namespaces/default/pods?resourceVersion=0", want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ws := ts.openWatch(t, tc.path+sep(tc.path)+"timeoutSeconds=1")
			if diff := cmp.Diff(tc.want, ws.rest(t)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
	r := ts.do(t, "GET", "/apis/batch/v1/watch/namespaces/default/jobs/a?fieldSelector=metadata.name%3Db", "")
	if r.code != 400 || !strings.Contains(r.body, "fieldSelector metadata.name doesn't match requested name") {
		t.Errorf("mismatched name: %d %s", r.code, r.body)
	}
	if r := ts.do(t, "POST", "/apis/batch/v1/watch/jobs", jobJSON("x")); r.code != 405 {
		t.Errorf("POST on a watch path: %d", r.code)
	}
}

// sep is the separator before one more query parameter of path.
func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

func TestWatchSelectorFromPastVersion(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, strings.Replace(jobJSON("a"), `"name":"a"`, `"name":"a","labels":{"team":"x"}`, 1)) // 1
	ts.mustDo(t, "PATCH", jobsPath+"/a", `{"metadata":{"labels":{"team":"y"}}}`, mergePatch)                           // 2: a leaves
	ts.mustDo(t, "POST", jobsPath, strings.Replace(jobJSON("b"), `"name":"b"`, `"name":"b","labels":{"team":"x"}`, 1)) // 3
	// From resourceVersion 1, a was selected: its change at 2 is a DELETED.
	ws := ts.openWatch(t, jobsPath+"?watch=1&resourceVersion=1&labelSelector=team%3Dx&timeoutSeconds=1")
	want := []event{{"DELETED", "Job", "a", "2"}, {"ADDED", "Job", "b", "3"}}
	if diff := cmp.Diff(want, ws.rest(t)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestWatchFromFutureVersion(t *testing.T) {
	shortFreshness(t)
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	r := ts.do(t, "GET", jobsPath+"?watch=1&resourceVersion=5", "")
	st := statusOf(t, r.body)
	if r.code != 504 || st.Reason != metav1.StatusReasonTimeout || st.Message != "Timeout: Too large resource version: 5, current: 1" {
		t.Errorf("got %d %s %q", r.code, st.Reason, st.Message)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge {
		t.Errorf("details %+v, want a ResourceVersionTooLarge cause", st.Details)
	}
}

func TestWatchInitialEventsNotOlderThan(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	ts.mustDo(t, "POST", jobsPath, jobJSON("b"))
	ws := ts.openWatch(t, jobsPath+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=1&allowWatchBookmarks=true")
	want := []event{{"ADDED", "Job", "a", "1"}, {"ADDED", "Job", "b", "2"}, {"BOOKMARK", "Job", "", "2"}}
	if diff := cmp.Diff(want, ws.next(t, 3)); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
	// Without bookmarks there is no end marker; sendInitialEvents=false starts from now.
	quiet := ts.openWatch(t, jobsPath+"?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&timeoutSeconds=1")
	ts.mustDo(t, "POST", jobsPath, jobJSON("c"))
	if diff := cmp.Diff([]event{{"ADDED", "Job", "c", "3"}}, quiet.rest(t)); diff != "" {
		t.Errorf("sendInitialEvents=false (-want,+got):\n%s", diff)
	}
}

func TestWatchTimeout(t *testing.T) {
	old := minRequestTimeout
	minRequestTimeout = 10 * time.Second
	t.Cleanup(func() { minRequestTimeout = old })
	ptr := func(n int64) *int64 { return &n }
	tests := []struct {
		name     string
		seconds  *int64
		min, max time.Duration
	}{
		{name: "timeoutSeconds", seconds: ptr(5), min: 5 * time.Second, max: 5 * time.Second},
		{name: "unset is min request timeout times 1 to 2", min: 10 * time.Second, max: 20 * time.Second},
		{name: "zero counts as unset", seconds: ptr(0), min: 10 * time.Second, max: 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < 100; i++ {
				if got := watchTimeout(tt.seconds); got < tt.min || got > tt.max {
					t.Fatalf("watchTimeout = %v, want within [%v, %v]", got, tt.min, tt.max)
				}
			}
		})
	}
}

func TestWatchWithoutTimeoutEndsAfterMinRequestTimeout(t *testing.T) {
	old := minRequestTimeout
	minRequestTimeout = 300 * time.Millisecond
	t.Cleanup(func() { minRequestTimeout = old })
	ts := newTestServer(t)
	ws := ts.openWatch(t, jobsPath+"?watch=true")
	if got := ws.rest(t); len(got) != 0 {
		t.Errorf("events: %+v", got)
	}
}
