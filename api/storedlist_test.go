package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// TestStoredListIsTheEncodedList: a list written from the stored JSON is,
// byte for byte, the kind's List of the decoded objects as writeJSON
// encodes it, compact and indented, for objects with a status, HTML-escaped
// characters, unicode and every metadata field a create fills.
func TestStoredListIsTheEncodedList(t *testing.T) {
	ts := newTestServer(t)
	for _, req := range []struct{ path, body string }{
		{"/api/v1/namespaces", `{"metadata":{"name":"other"}}`},
		{"/apis/batch/v1/namespaces/default/jobs", `{"metadata":{"name":"a","labels":{"x":"1"},"annotations":{"note":"<b>&amp; ünïcode \"quoted\"</b>"}},
			"spec":{"suspend":true,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35","command":["sh","-c","echo '<&>'"]}]}}}}`},
		{"/apis/batch/v1/namespaces/other/jobs", `{"metadata":{"generateName":"g-"},
			"spec":{"completions":3,"parallelism":2,"template":{"spec":{"restartPolicy":"OnFailure","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`},
		{"/api/v1/namespaces/default/pods", `{"metadata":{"name":"p","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox:1.35",
			"resources":{"limits":{"cpu":"500m","memory":"64Mi"}},"ports":[{"containerPort":80}]}]}}`},
		{"/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"cm"},"data":{"k":"v\n<>"},"binaryData":{"b":"AAEC"}}`},
	} {
		if resp := ts.do(t, http.MethodPost, req.path, req.body); resp.code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", req.path, resp.code, resp.body)
		}
	}
	if resp := ts.do(t, http.MethodPatch, "/api/v1/namespaces/default/pods/p/status",
		`{"status":{"phase":"Running","podIP":"10.88.0.5","conditions":[{"type":"Ready","status":"True"}]}}`,
		"Content-Type: application/merge-patch+json"); resp.code != http.StatusOK {
		t.Fatalf("patching the pod's status: %d %s", resp.code, resp.body)
	}
	remaining := int64(7)
	for name, rs := range map[string]*resource{"jobs": jobResource, "pods": podResource, "namespaces": namespaceResource, "configmaps": configMapResource} {
		t.Run(name, func(t *testing.T) {
			stored, rv, err := ts.store.ListStoredAt(rs.store, "", nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			items := make([]listed, len(stored))
			objs := make([]db.Object, len(stored))
			for i, st := range stored {
				items[i] = listed{Stored: st}
				if objs[i], err = st.Decode(rs.store); err != nil {
					t.Fatal(err)
				}
			}
			if len(items) == 0 {
				t.Fatal("nothing stored")
			}
			meta := metav1.ListMeta{ResourceVersion: "12", Continue: "token", RemainingItemCount: &remaining}
			body, ok := storedListJSON(rs, items, meta)
			if !ok {
				t.Fatal("not written from the stored JSON")
			}
			got := written(t, body)
			var want bytes.Buffer
			if err := json.NewEncoder(&want).Encode(rs.newList(objs, meta)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.String(), string(got)); diff != "" {
				t.Errorf("at rv %d (-decoded and encoded +from the stored JSON):\n%s", rv, diff)
			}
			var indented, wantIndented bytes.Buffer
			if err := json.Indent(&indented, got, "", "  "); err != nil {
				t.Fatal(err)
			}
			enc := json.NewEncoder(&wantIndented)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rs.newList(objs, meta)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantIndented.String(), indented.String()); diff != "" {
				t.Errorf("indented (-decoded and encoded +from the stored JSON):\n%s", diff)
			}
		})
	}
}

// written is what body writes.
func written(t *testing.T, body io.WriterTo) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := body.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("writing the body: %d of %d bytes, %v", n, buf.Len(), err)
	}
	return buf.Bytes()
}

// TestStoredListOtherShapes: an item whose stored JSON has no uid where
// the encoder puts it is decoded and encoded instead; a kind served
// converted (events.k8s.io/v1) never takes the stored JSON.
func TestStoredListOtherShapes(t *testing.T) {
	items := []listed{{Stored: db.Stored{Name: "x", RV: 5, JSON: []byte(`{"metadata":{"name":"x","namespace":"default"},"spec":{}}`)}}}
	body, ok := storedListJSON(jobResource, items, metav1.ListMeta{ResourceVersion: "5"})
	if !ok {
		t.Fatal("not written")
	}
	got := written(t, body)
	want := `{"kind":"JobList","apiVersion":"batch/v1","metadata":{"resourceVersion":"5"},"items":[{` +
		`"metadata":{"name":"x","namespace":"default","resourceVersion":"5"},"spec":{"template":{"metadata":{},"spec":{"containers":null}}},"status":{}}]}` + "\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if eventV1Resource.servedAsStored() || !eventResource.servedAsStored() || !jobResource.servedAsStored() {
		t.Errorf("servedAsStored: events.k8s.io/v1 %v, v1 %v, jobs %v", eventV1Resource.servedAsStored(),
			eventResource.servedAsStored(), jobResource.servedAsStored())
	}
}

// TestDecodeListedKeepsOrder: the chunks decoded side by side land in the
// list's order, and one item that does not decode fails the whole list.
func TestDecodeListedKeepsOrder(t *testing.T) {
	items := make([]listed, 3*decodeChunk+7)
	for i := range items {
		name := "job-" + strconv.Itoa(i)
		items[i] = listed{Stored: db.Stored{Namespace: "default", Name: name, RV: uint64(i + 1),
			JSON: []byte(`{"metadata":{"name":"` + name + `","namespace":"default"}}`)}}
	}
	objs, err := decodeListed(jobResource, items)
	if err != nil {
		t.Fatal(err)
	}
	for i, obj := range objs {
		if want := "job-" + strconv.Itoa(i); obj.GetName() != want || obj.GetResourceVersion() != strconv.Itoa(i+1) {
			t.Fatalf("item %d: %s at %s, want %s at %d", i, obj.GetName(), obj.GetResourceVersion(), want, i+1)
		}
	}
	items[2*decodeChunk+1].obj = nil
	items[2*decodeChunk+1].JSON = []byte(`{"metadata":`)
	if _, err := decodeListed(jobResource, items); err == nil {
		t.Error("a list with an item that does not decode decoded")
	}
}

// TestStoredTableIsTheEncodedTable: a Table written from the stored JSON
// (the cells' fields decoded alone, the metadata copied) is, byte for byte,
// the Table of the decoded objects as writeJSON encodes it, for Jobs and
// pods with every field their cells read (Jobs complete, failed, suspended,
// running, indexed, with selector expressions; pods pending, running,
// initializing, failed, terminating; unicode and escaped strings), with and
// without row objects. TestDecodeJobCells and TestDecodePodCells try more
// objects than the API lets a test create.
func TestStoredTableIsTheEncodedTable(t *testing.T) {
	ts := newTestServer(t)
	for _, req := range []struct{ path, body string }{
		{"/apis/batch/v1/namespaces/default/jobs", `{"metadata":{"name":"a","labels":{"x":"1"},"annotations":{"note":"<b>&amp; ünïcode \"quoted\"</b>"}},
			"spec":{"suspend":true,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35","command":["sh","-c","echo '<&>'"]}]}}}}`},
		{"/apis/batch/v1/namespaces/default/jobs", `{"metadata":{"name":"b"},"spec":{"completions":3,"parallelism":2,"template":{"spec":{"restartPolicy":"OnFailure",
			"containers":[{"name":"c","image":"busybox:1.35"},{"name":"d","image":"busybox:1.36"}]}}}}`},
		{"/apis/batch/v1/namespaces/default/jobs", `{"metadata":{"name":"c"},"spec":{"parallelism":4,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`},
		{"/apis/batch/v1/namespaces/default/jobs", `{"metadata":{"name":"indexed"},"spec":{"completionMode":"Indexed","completions":2,"parallelism":2,
			"backoffLimitPerIndex":1,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"registry.example/ünï/cødé:1.35"}]}}}}`},
		{"/apis/batch/v1/namespaces/default/jobs", `{"metadata":{"name":"expressions"},"spec":{"manualSelector":true,
			"selector":{"matchLabels":{"app":"e"},"matchExpressions":[{"key":"tier","operator":"In","values":["b","a"]},{"key":"gpu","operator":"DoesNotExist"}]},
			"template":{"metadata":{"labels":{"app":"e","tier":"a"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`},
		{"/api/v1/namespaces/default/pods", `{"metadata":{"name":"failed"},"spec":{"containers":[{"name":"a","image":"busybox:1.35"},{"name":"b","image":"busybox:1.35"}]}}`},
		{"/api/v1/namespaces/default/pods", `{"metadata":{"name":"running"},"spec":{"nodeName":"node","readinessGates":[{"conditionType":"example.com/gate"}],
			"containers":[{"name":"a","image":"busybox:1.35"},{"name":"b","image":"busybox:1.35"}]}}`},
		{"/api/v1/namespaces/default/pods", `{"metadata":{"name":"initializing"},"spec":{"initContainers":[{"name":"i","image":"busybox:1.35"},
			{"name":"side","image":"busybox:1.35","restartPolicy":"Always"}],"containers":[{"name":"a","image":"busybox:1.35"}]}}`},
		{"/api/v1/namespaces/default/pods", `{"metadata":{"name":"pending"},"spec":{"containers":[{"name":"a","image":"busybox:1.35"}]}}`},
	} {
		if resp := ts.do(t, http.MethodPost, req.path, req.body); resp.code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", req.path, resp.code, resp.body)
		}
	}
	for _, patch := range []struct{ path, body string }{
		{"/apis/batch/v1/namespaces/default/jobs/b/status", `{"status":{"startTime":"2026-11-25T08:00:00Z","completionTime":"2026-11-25T08:01:30Z","succeeded":3,
			"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True"}]}}`},
		{"/apis/batch/v1/namespaces/default/jobs/c/status", `{"status":{"startTime":"2026-11-25T08:00:00Z","active":4}}`},
		{"/apis/batch/v1/namespaces/default/jobs/expressions/status", `{"status":{"startTime":"2026-11-25T08:00:00Z","failed":1,
			"conditions":[{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded","message":"<&> \"quoted\" ünï"},{"type":"Failed","status":"True"}]}}`},
		{"/api/v1/namespaces/default/pods/failed/status", `{"status":{"phase":"Failed","reason":"","message":"ünï <&>",
			"containerStatuses":[{"name":"a","ready":false,"restartCount":0,"image":"busybox:1.35","imageID":"","state":{"terminated":{"exitCode":137,"signal":9,"startedAt":"2026-11-25T08:00:00Z","finishedAt":"2026-11-25T08:00:01Z"}}},
			{"name":"b","ready":false,"restartCount":0,"image":"busybox:1.35","imageID":"","state":{"terminated":{"exitCode":0,"reason":"Completed","startedAt":"2026-11-25T08:00:00Z","finishedAt":"2026-11-25T08:00:01Z"}}}]}}`},
		{"/api/v1/namespaces/default/pods/running/status", `{"status":{"phase":"Running","podIP":"10.88.0.5","nominatedNodeName":"other",
			"conditions":[{"type":"Ready","status":"True"},{"type":"example.com/gate","status":"True"}],
			"containerStatuses":[{"name":"a","ready":true,"restartCount":2,"image":"busybox:1.35","imageID":"","state":{"running":{"startedAt":"2026-11-25T08:00:00Z"}},
				"lastState":{"terminated":{"exitCode":1,"reason":"Error","startedAt":"2026-11-25T07:58:00Z","finishedAt":"2026-11-25T07:59:00Z"}}},
			{"name":"b","ready":false,"restartCount":0,"image":"busybox:1.35","imageID":"","state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}}`},
		{"/api/v1/namespaces/default/pods/initializing/status", `{"status":{"phase":"Pending",
			"initContainerStatuses":[{"name":"i","ready":false,"restartCount":1,"image":"busybox:1.35","imageID":"","state":{"terminated":{"exitCode":0,"startedAt":"2026-11-25T08:00:00Z","finishedAt":"2026-11-25T08:00:01Z"}}},
			{"name":"side","ready":false,"restartCount":0,"image":"busybox:1.35","imageID":"","started":true,"state":{"running":{"startedAt":"2026-11-25T08:00:02Z"}}}]}}`},
	} {
		if resp := ts.do(t, http.MethodPatch, patch.path, patch.body, "Content-Type: application/merge-patch+json"); resp.code != http.StatusOK {
			t.Fatalf("PATCH %s: %d %s", patch.path, resp.code, resp.body)
		}
	}
	if resp := ts.do(t, http.MethodDelete, "/api/v1/namespaces/default/pods/pending", ""); resp.code != http.StatusOK {
		t.Fatalf("deleting a pod: %d %s", resp.code, resp.body)
	}
	now := time.Now()
	for name, rs := range map[string]*resource{"jobs": jobResource, "pods": podResource} {
		stored, _, err := ts.store.ListStoredAt(rs.store, "", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		items := make([]listed, len(stored))
		objs := make([]db.Object, len(stored))
		for i, st := range stored {
			items[i] = listed{Stored: st}
			if objs[i], err = st.Decode(rs.store); err != nil {
				t.Fatal(err)
			}
		}
		if len(items) != 5 && len(items) != 4 {
			t.Fatalf("%d %s stored, want 5 jobs or 4 pods", len(items), name)
		}
		for _, include := range []string{"", "Metadata", "None"} {
			t.Run(name+"/includeObject="+include, func(t *testing.T) {
				meta := metav1.ListMeta{ResourceVersion: "12"}
				body, ok, err := storedTableJSON(rs, "v1", include, items, meta, now)
				if err != nil || !ok {
					t.Fatalf("not written from the stored JSON: %v", err)
				}
				got := written(t, body)
				r := httptest.NewRequest(http.MethodGet, "/?includeObject="+include, nil)
				table := rs.table(r, "v1", objs, meta)
				for i := range table.Rows { // the same clock for the age cells
					table.Rows[i].Cells = rs.cells(objs[i], now)
				}
				var want bytes.Buffer
				if err := json.NewEncoder(&want).Encode(table); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want.String(), string(got)); diff != "" {
					t.Errorf("(-decoded and encoded +from the stored JSON):\n%s", diff)
				}
			})
		}
		if _, ok, _ := storedTableJSON(rs, "v1", "Object", items, metav1.ListMeta{}, now); ok {
			t.Errorf("%s: includeObject=Object was written without the whole objects", name)
		}
	}
}

// TestStoredListResponses: a list and a Table written from the stored JSON
// reach the client whole, as JSON, compact or indented (?pretty), larger
// than the response's buffer.
func TestStoredListResponses(t *testing.T) {
	ts := newTestServer(t)
	for i := range 40 {
		body := `{"metadata":{"name":"job-` + strconv.Itoa(i) + `","annotations":{"pad":"` + strings.Repeat("x", 2000) + `"}},` +
			`"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox:1.35"}]}}}}`
		if resp := ts.do(t, http.MethodPost, "/apis/batch/v1/namespaces/default/jobs", body); resp.code != http.StatusCreated {
			t.Fatalf("creating a Job: %d %s", resp.code, resp.body)
		}
	}
	for name, accept := range map[string]string{"list": "application/json", "table": "application/json;as=Table;v=v1;g=meta.k8s.io"} {
		t.Run(name, func(t *testing.T) {
			compact := ts.do(t, http.MethodGet, "/apis/batch/v1/namespaces/default/jobs", "", "Accept: "+accept)
			pretty := ts.do(t, http.MethodGet, "/apis/batch/v1/namespaces/default/jobs?pretty=true", "", "Accept: "+accept)
			for _, resp := range []response{compact, pretty} {
				if resp.code != http.StatusOK || resp.header.Get("Content-Type") != "application/json" {
					t.Fatalf("%d %s", resp.code, resp.header.Get("Content-Type"))
				}
			}
			var list struct {
				Items, Rows []json.RawMessage
			}
			if err := json.Unmarshal([]byte(compact.body), &list); err != nil || len(list.Items)+len(list.Rows) != 40 {
				t.Fatalf("%d items, %d rows: %v", len(list.Items), len(list.Rows), err)
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, []byte(compact.body), "", "  "); err != nil {
				t.Fatal(err)
			}
			if indented.String() != pretty.body || strings.Count(pretty.body, "\n") < 100 {
				t.Errorf("?pretty=true is not the list indented:\n%.400s", pretty.body)
			}
		})
	}
}
