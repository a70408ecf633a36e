package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

const eventsV1Path = "/apis/events.k8s.io/v1/namespaces/default/events"

func TestEventsV1Discovery(t *testing.T) {
	ts := newTestServer(t)
	var list metav1.APIResourceList
	mustJSON(t, ts.mustDo(t, "GET", "/apis/events.k8s.io/v1", "").body, &list)
	want := []metav1.APIResource{{Name: "events", SingularName: "event", Namespaced: true, Kind: "Event", ShortNames: []string{"ev"},
		Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}}}
	if diff := cmp.Diff(want, list.APIResources); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestEventsV1ReadsCoreEvents(t *testing.T) {
	ts := newTestServer(t)
	storeEvents(t, ts.store)
	var ev eventsv1.Event
	mustJSON(t, ts.mustDo(t, "GET", eventsV1Path+"/pi.1", "").body, &ev)
	if diff := cmp.Diff([]string{"events.k8s.io/v1", "Event", "Created pod: pi-abcde", "job-controller", "pi", "job-controller"},
		[]string{ev.APIVersion, ev.Kind, ev.Note, ev.ReportingController, ev.Regarding.Name, ev.DeprecatedSource.Component}); diff != "" {
		t.Errorf("GET (-want,+got):\n%s", diff)
	}
	var list eventsv1.EventList
	mustJSON(t, ts.mustDo(t, "GET", "/apis/events.k8s.io/v1/events?fieldSelector="+url.QueryEscape("regarding.kind=Pod,reportingController=kubelet"), "").body, &list)
	if len(list.Items) != 1 || list.Kind != "EventList" || list.APIVersion != "events.k8s.io/v1" ||
		list.Items[0].Note != "Back-off restarting failed container pi" || list.Items[0].DeprecatedCount != 3 {
		t.Errorf("list: %+v", list)
	}
	r := ts.do(t, "GET", eventsV1Path+"?fieldSelector=involvedObject.kind%3DPod", "")
	if st := statusOf(t, r.body); r.code != 400 || st.Message != "field label not supported: involvedObject.kind" {
		t.Errorf("a core field name: %d %s", r.code, r.body)
	}
	r = ts.mustDo(t, "GET", eventsV1Path+"?pretty=true", "")
	if !strings.Contains(r.body, "\n  \"apiVersion\": \"events.k8s.io/v1\"") || !strings.Contains(r.body, `"note": "Created pod: pi-abcde"`) {
		t.Errorf("pretty list:\n%s", r.body)
	}
}

func TestEventsV1Writes(t *testing.T) {
	ts := newTestServer(t)
	body := `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"x.1"},
		"eventTime":"2025-03-01T10:00:00.000000Z","reportingController":"example.com/ctl","reportingInstance":"ctl-1",
		"action":"Sync","reason":"Synced","regarding":{"kind":"Pod","namespace":"default","name":"x"},"note":"all good","type":"Normal"}`
	r := ts.mustDo(t, "POST", eventsV1Path, body)
	var created eventsv1.Event
	mustJSON(t, r.body, &created)
	if r.code != http.StatusCreated || created.APIVersion != "events.k8s.io/v1" || created.Note != "all good" || created.UID == "" {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	var core corev1.Event
	mustJSON(t, ts.mustDo(t, "GET", "/api/v1/namespaces/default/events/x.1", "").body, &core)
	if diff := cmp.Diff([]string{"all good", "Sync", "example.com/ctl", "ctl-1", "x"},
		[]string{core.Message, core.Action, core.ReportingController, core.ReportingInstance, core.InvolvedObject.Name}); diff != "" {
		t.Errorf("as core/v1 (-want,+got):\n%s", diff)
	}
	// client-go's events recorder counts repeats with a patch of the series.
	patch := `{"series":{"count":2,"lastObservedTime":"2025-03-01T10:01:00.000000Z"}}`
	var patched eventsv1.Event
	mustJSON(t, ts.mustDo(t, "PATCH", eventsV1Path+"/x.1", patch, "Content-Type: application/strategic-merge-patch+json").body, &patched)
	if patched.Series == nil || patched.Series.Count != 2 || patched.Note != "all good" {
		t.Errorf("patched: %+v", patched)
	}
	r = ts.do(t, "POST", eventsV1Path, `{"apiVersion":"v1","kind":"Event","metadata":{"name":"y"}}`)
	if r.code != 400 {
		t.Errorf("a core/v1 body: %d %s", r.code, r.body)
	}
	r = ts.mustDo(t, "DELETE", eventsV1Path+"/x.1", "")
	if st := statusOf(t, r.body); st.Status != metav1.StatusSuccess {
		t.Errorf("delete: %s", r.body)
	}
	if r := ts.do(t, "GET", eventsV1Path+"/x.1", ""); r.code != 404 {
		t.Errorf("after delete: %d", r.code)
	}
}

func TestEventsV1Watch(t *testing.T) {
	ts := newTestServer(t)
	req, err := http.NewRequest("GET", ts.URL+eventsV1Path+"?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	ts.waitWatch(t, "watch=true")
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "w.1", Namespace: "default"}, Message: "hello",
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "w"}}
	if err := ts.store.Create(db.Events, ev); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line := <-lines:
		var got struct {
			Type   string         `json:"type"`
			Object eventsv1.Event `json:"object"`
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if got.Type != "ADDED" || got.Object.APIVersion != "events.k8s.io/v1" || got.Object.Note != "hello" {
			t.Errorf("watch event: %s", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
}
