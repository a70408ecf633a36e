package api

import (
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// storeEvents stores events on a job and a pod (as the recorders do).
func storeEvents(t *testing.T, store *db.Store) {
	t.Helper()
	ts := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	job := corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: "default", Name: "pi", UID: "job-uid"}
	pod := corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "pi-abcde", UID: "pod-uid",
		FieldPath: "spec.containers{pi}"}
	for _, ev := range []*corev1.Event{
		{ObjectMeta: metav1.ObjectMeta{Name: "pi.1", Namespace: "default"}, InvolvedObject: job, Type: "Normal",
			Reason: "SuccessfulCreate", Message: "Created pod: pi-abcde", Count: 1, FirstTimestamp: ts, LastTimestamp: ts,
			Source: corev1.EventSource{Component: "job-controller"}, ReportingController: "job-controller"},
		{ObjectMeta: metav1.ObjectMeta{Name: "pi-abcde.2", Namespace: "default"}, InvolvedObject: pod, Type: "Warning",
			Reason: "BackOff", Message: "Back-off restarting failed container pi", Count: 3, FirstTimestamp: ts, LastTimestamp: ts,
			Source: corev1.EventSource{Component: "kubelet", Host: "node-a"}, ReportingController: "kubelet", ReportingInstance: "node-a"},
	} {
		if err := store.Create(db.Events, ev); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEventFieldSelectors(t *testing.T) {
	tests := map[string]struct {
		path     string
		selector string
		want     []string
	}{
		"what kubectl describe job asks": {path: "/api/v1/namespaces/default/events",
			selector: "involvedObject.name=pi,involvedObject.namespace=default,involvedObject.kind=Job,involvedObject.uid=job-uid",
			want:     []string{"pi.1"}},
		"all namespaces by kind": {path: "/api/v1/events", selector: "involvedObject.kind=Pod", want: []string{"pi-abcde.2"}},
		"by type":                {path: "/api/v1/events", selector: "type=Warning", want: []string{"pi-abcde.2"}},
		"by reason and source":   {path: "/api/v1/events", selector: "reason=SuccessfulCreate,source=job-controller", want: []string{"pi.1"}},
		"by field path":          {path: "/api/v1/events", selector: "involvedObject.fieldPath=spec.containers{pi}", want: []string{"pi-abcde.2"}},
		"reportingComponent":     {path: "/api/v1/events", selector: "reportingComponent=kubelet", want: []string{"pi-abcde.2"}},
		"no match":               {path: "/api/v1/events", selector: "involvedObject.uid=other", want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			storeEvents(t, ts.store)
			var list corev1.EventList
			mustJSON(t, ts.mustDo(t, "GET", tc.path+"?fieldSelector="+url.QueryEscape(tc.selector), "").body, &list)
			var got []string
			for _, ev := range list.Items {
				got = append(got, ev.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestEventTable(t *testing.T) {
	ts := newTestServer(t)
	storeEvents(t, ts.store)
	var table metav1.Table
	mustJSON(t, ts.mustDo(t, "GET", "/api/v1/namespaces/default/events", "",
		"Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json").body, &table)
	var rows [][]any
	for _, row := range table.Rows {
		rows = append(rows, row.Cells)
	}
	want := [][]any{ // by name
		{"10m", "Warning", "BackOff", "pod/pi-abcde", "spec.containers{pi}", "kubelet, node-a",
			"Back-off restarting failed container pi", "10m", float64(3), "pi-abcde.2"},
		{"10m", "Normal", "SuccessfulCreate", "job/pi", "", "job-controller", "Created pod: pi-abcde", "10m", float64(1), "pi.1"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestEventCreate(t *testing.T) {
	tests := map[string]struct {
		body        string
		wantCode    int
		wantMessage string
	}{
		"a client's event": {
			body:     `{"metadata":{"name":"x.1"},"involvedObject":{"kind":"Pod","namespace":"default","name":"x"},"reason":"Custom","message":"hello","type":"Normal","count":1}`,
			wantCode: 201,
		},
		"on a cluster-scoped object": {
			body:     `{"metadata":{"name":"n.1"},"involvedObject":{"kind":"Node","name":"n"},"reason":"Custom","type":"Normal"}`,
			wantCode: 201,
		},
		"in another namespace than its object": {
			body:        `{"metadata":{"name":"x.2"},"involvedObject":{"kind":"Pod","namespace":"other","name":"x"},"reason":"Custom"}`,
			wantCode:    422,
			wantMessage: `Event "x.2" is invalid: involvedObject.namespace: Invalid value: "other": does not match event.namespace`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			r := ts.do(t, "POST", "/api/v1/namespaces/default/events", tc.body)
			if r.code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", r.code, tc.wantCode, r.body)
			}
			if tc.wantMessage != "" {
				if diff := cmp.Diff(tc.wantMessage, statusOf(t, r.body).Message); diff != "" {
					t.Errorf("(-want,+got):\n%s", diff)
				}
			}
		})
	}
}

func TestEventsHaveNoStatus(t *testing.T) {
	ts := newTestServer(t)
	storeEvents(t, ts.store)
	if r := ts.do(t, "GET", "/api/v1/namespaces/default/events/pi.1/status", ""); r.code != 404 {
		t.Errorf("GET events/status = %d %s", r.code, r.body)
	}
}
