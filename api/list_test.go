package api

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
)

// listBody is a decoded list response: its metadata and items' keys.
type listBody struct {
	Metadata metav1.ListMeta
	Items    []struct{ Metadata metav1.ObjectMeta }
}

// names are the items as "name@resourceVersion".
func (l listBody) names() []string {
	out := []string{}
	for _, it := range l.Items {
		out = append(out, it.Metadata.Name+"@"+it.Metadata.ResourceVersion)
	}
	return out
}

func (ts *testServer) list(t *testing.T, path string) listBody {
	t.Helper()
	var l listBody
	if err := json.Unmarshal([]byte(ts.mustDo(t, "GET", path, "").body), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// shortFreshness makes waits for unreached resourceVersions short.
func shortFreshness(t *testing.T) {
	old := freshnessTimeout
	freshnessTimeout = 50 * time.Millisecond
	t.Cleanup(func() { freshnessTimeout = old })
}

const mergePatch = "Content-Type: application/merge-patch+json"

func TestListResourceVersions(t *testing.T) {
	shortFreshness(t)
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))                                          // 1
	ts.mustDo(t, "POST", jobsPath, jobJSON("b"))                                          // 2
	ts.mustDo(t, "POST", jobsPath, jobJSON("c"))                                          // 3
	ts.mustDo(t, "PATCH", jobsPath+"/a", `{"metadata":{"labels":{"x":"y"}}}`, mergePatch) // 4
	ts.mustDo(t, "DELETE", jobsPath+"/b", "")                                             // 5
	tests := map[string]struct {
		query      string
		want       []string
		wantRV     string
		wantCode   int
		wantReason metav1.StatusReason
		wantMsg    string
	}{
		"newest":                {query: "", want: []string{"a@4", "c@3"}, wantRV: "5"},
		"any":                   {query: "resourceVersion=0", want: []string{"a@4", "c@3"}, wantRV: "5"},
		"not older than":        {query: "resourceVersion=2", want: []string{"a@4", "c@3"}, wantRV: "5"},
		"not older than, named": {query: "resourceVersion=2&resourceVersionMatch=NotOlderThan", want: []string{"a@4", "c@3"}, wantRV: "5"},
		"exact":                 {query: "resourceVersion=2&resourceVersionMatch=Exact", want: []string{"a@1", "b@2"}, wantRV: "2"},
		"exact before a change": {query: "resourceVersion=4&resourceVersionMatch=Exact", want: []string{"a@4", "b@2", "c@3"}, wantRV: "4"},
		"legacy exact (limit)":  {query: "resourceVersion=3&limit=10", want: []string{"a@1", "b@2", "c@3"}, wantRV: "3"},
		"future": {query: "resourceVersion=99", wantCode: 504, wantReason: metav1.StatusReasonTimeout,
			wantMsg: "Too large resource version: 99, current: 5"},
		"future exact": {query: "resourceVersion=99&resourceVersionMatch=Exact", wantCode: 504, wantReason: metav1.StatusReasonTimeout},
		"malformed": {query: "resourceVersion=abc", wantCode: 400, wantReason: metav1.StatusReasonBadRequest,
			wantMsg: `invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`},
		"match without version": {query: "resourceVersionMatch=Exact", wantCode: 422, wantReason: metav1.StatusReasonInvalid,
			wantMsg: `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided`},
		"exact zero": {query: "resourceVersion=0&resourceVersionMatch=Exact", wantCode: 422,
			wantMsg: `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`},
		"unknown match": {query: "resourceVersion=1&resourceVersionMatch=Newest", wantCode: 422,
			wantMsg: `resourceVersionMatch: Unsupported value: "Newest"`},
		"initial events on a list": {query: "sendInitialEvents=true", wantCode: 422,
			wantMsg: "sendInitialEvents is forbidden for list"},
		"bad limit": {query: "limit=x", wantCode: 400, wantReason: metav1.StatusReasonBadRequest},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, "GET", jobsPath+"?"+tc.query, "")
			if tc.wantCode != 0 {
				st := statusOf(t, r.body)
				if r.code != tc.wantCode || (tc.wantReason != "" && st.Reason != tc.wantReason) || !strings.Contains(st.Message, tc.wantMsg) {
					t.Errorf("got %d %s %q, want %d %s %q", r.code, st.Reason, st.Message, tc.wantCode, tc.wantReason, tc.wantMsg)
				}
				return
			}
			var l listBody
			if err := json.Unmarshal([]byte(r.body), &l); err != nil || r.code != 200 {
				t.Fatalf("%d %s", r.code, r.body)
			}
			if diff := cmp.Diff(tc.want, l.names()); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if l.Metadata.ResourceVersion != tc.wantRV {
				t.Errorf("list resourceVersion %q, want %q", l.Metadata.ResourceVersion, tc.wantRV)
			}
		})
	}
}

func TestListExactCompacted(t *testing.T) {
	ts := newTestServer(t, db.WithChangeLogSize(2))
	for _, n := range []string{"a", "b", "c", "d"} {
		ts.mustDo(t, "POST", jobsPath, jobJSON(n))
	}
	r := ts.do(t, "GET", jobsPath+"?resourceVersion=1&resourceVersionMatch=Exact", "")
	st := statusOf(t, r.body)
	if r.code != 410 || st.Reason != metav1.StatusReasonExpired || st.Message != msgListExpired {
		t.Errorf("got %d %s %q, want 410 Expired %q", r.code, st.Reason, st.Message, msgListExpired)
	}
	if got := ts.list(t, jobsPath+"?resourceVersion=2&resourceVersionMatch=Exact").names(); !cmp.Equal(got, []string{"a@1", "b@2"}) {
		t.Errorf("exact list at the oldest retained version: %v", got)
	}
}

func TestGetResourceVersion(t *testing.T) {
	shortFreshness(t)
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("a"))
	tests := map[string]struct {
		query    string
		wantCode int
		wantMsg  string
	}{
		"unset":     {query: "", wantCode: 200},
		"any":       {query: "resourceVersion=0", wantCode: 200},
		"reached":   {query: "resourceVersion=1", wantCode: 200},
		"future":    {query: "resourceVersion=7", wantCode: 504, wantMsg: "Too large resource version: 7, current: 1"},
		"malformed": {query: "resourceVersion=-1", wantCode: 400, wantMsg: "invalid resource version"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, "GET", jobsPath+"/a?"+tc.query, "")
			if r.code != tc.wantCode || !strings.Contains(r.body, tc.wantMsg) {
				t.Errorf("got %d %s, want %d %q", r.code, r.body, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

// selectorPod is a pod in namespace ns with the given labels and state.
func selectorPod(ns, name string, labels map[string]string, mutate func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, SchedulerName: "default-scheduler",
			ServiceAccountName: "default", NodeName: "node-a",
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.88.0.2"},
	}
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

func TestListSelectors(t *testing.T) {
	ts := newTestServer(t)
	pods := []*corev1.Pod{
		selectorPod("default", "web", map[string]string{"app": "web", "tier": "front"}, nil),
		selectorPod("default", "db", map[string]string{"app": "db", "tier": "back"}, func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.PodIP = ""
			p.Status.NominatedNodeName = "node-b"
		}),
		selectorPod("default", "batch", map[string]string{"app": "batch"}, func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Spec.SchedulerName = "other"
			p.Spec.ServiceAccountName = "robot"
			p.Spec.NodeName = "node-b"
			p.Status.Phase = corev1.PodSucceeded
		}),
		selectorPod("other", "web", map[string]string{"app": "web"}, nil),
	}
	for _, p := range pods {
		if err := ts.store.Create(db.Pods, p); err != nil {
			t.Fatal(err)
		}
	}
	tests := map[string]struct {
		path string
		want []string // namespace/name
	}{
		"equals":               {path: podsPath + "?labelSelector=app%3Dweb", want: []string{"default/web"}},
		"double equals":        {path: podsPath + "?labelSelector=" + url.QueryEscape("app==db"), want: []string{"default/db"}},
		"not equals":           {path: podsPath + "?labelSelector=" + url.QueryEscape("app!=web"), want: []string{"default/batch", "default/db"}},
		"in":                   {path: podsPath + "?labelSelector=" + url.QueryEscape("app in (web,db)"), want: []string{"default/db", "default/web"}},
		"notin":                {path: podsPath + "?labelSelector=" + url.QueryEscape("app notin (web,db)"), want: []string{"default/batch"}},
		"exists":               {path: podsPath + "?labelSelector=tier", want: []string{"default/db", "default/web"}},
		"does not exist":       {path: podsPath + "?labelSelector=" + url.QueryEscape("!tier"), want: []string{"default/batch"}},
		"and":                  {path: podsPath + "?labelSelector=" + url.QueryEscape("tier,app!=db"), want: []string{"default/web"}},
		"all namespaces":       {path: "/api/v1/pods?labelSelector=app%3Dweb", want: []string{"default/web", "other/web"}},
		"name":                 {path: "/api/v1/pods?fieldSelector=metadata.name%3Dweb", want: []string{"default/web", "other/web"}},
		"namespace":            {path: "/api/v1/pods?fieldSelector=metadata.namespace%3Dother", want: []string{"other/web"}},
		"not namespace":        {path: "/api/v1/pods?fieldSelector=metadata.namespace!%3Dother", want: []string{"default/batch", "default/db", "default/web"}},
		"phase":                {path: podsPath + "?fieldSelector=status.phase%3DPending", want: []string{"default/db"}},
		"phase not":            {path: podsPath + "?fieldSelector=" + url.QueryEscape("status.phase!=Running,status.phase!=Pending"), want: []string{"default/batch"}},
		"node":                 {path: podsPath + "?fieldSelector=spec.nodeName%3Dnode-b", want: []string{"default/batch"}},
		"restart policy":       {path: podsPath + "?fieldSelector=spec.restartPolicy%3DNever", want: []string{"default/batch"}},
		"scheduler":            {path: podsPath + "?fieldSelector=spec.schedulerName%3Dother", want: []string{"default/batch"}},
		"service account":      {path: podsPath + "?fieldSelector=spec.serviceAccountName%3Drobot", want: []string{"default/batch"}},
		"pod IP":               {path: podsPath + "?fieldSelector=status.podIP%3D10.88.0.2", want: []string{"default/batch", "default/web"}},
		"nominated node":       {path: podsPath + "?fieldSelector=status.nominatedNodeName%3Dnode-b", want: []string{"default/db"}},
		"labels and fields":    {path: podsPath + "?labelSelector=tier&fieldSelector=status.phase%3DRunning", want: []string{"default/web"}},
		"nothing":              {path: podsPath + "?labelSelector=app%3Dnone", want: []string{}},
		"all namespaces order": {path: "/api/v1/pods", want: []string{"default/batch", "default/db", "default/web", "other/web"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var l struct{ Items []corev1.Pod }
			if err := json.Unmarshal([]byte(ts.mustDo(t, "GET", tc.path, "").body), &l); err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, p := range l.Items {
				got = append(got, p.Namespace+"/"+p.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobFieldSelector(t *testing.T) {
	ts := newTestServer(t)
	ts.mustDo(t, "POST", jobsPath, jobJSON("done"))
	ts.mustDo(t, "POST", jobsPath, jobJSON("running"))
	ts.mustDo(t, "PATCH", jobsPath+"/done/status", `{"status":{"succeeded":1}}`, mergePatch)
	if got := ts.list(t, jobsPath+"?fieldSelector=status.successful%3D1").names(); len(got) != 1 || !strings.HasPrefix(got[0], "done@") {
		t.Errorf("status.successful=1: %v", got)
	}
}

func TestSelectorErrors(t *testing.T) {
	tests := map[string]struct {
		path     string
		wantCode int
		wantMsg  string
	}{
		"bad label selector":      {path: podsPath + "?labelSelector=" + url.QueryEscape("a in (b"), wantCode: 400, wantMsg: "unable to parse requirement"},
		"bad label value":         {path: podsPath + "?labelSelector=" + url.QueryEscape("a=b c"), wantCode: 400},
		"bad field selector":      {path: podsPath + "?fieldSelector=" + url.QueryEscape("a=b="), wantCode: 400, wantMsg: "invalid field selector"},
		"unsupported pod field":   {path: podsPath + "?fieldSelector=spec.hostname%3Dx", wantCode: 400, wantMsg: "field label not supported: spec.hostname"},
		"unsupported job field":   {path: jobsPath + "?fieldSelector=status.phase%3Dx", wantCode: 400, wantMsg: "field label not supported: status.phase"},
		"unsupported in a watch":  {path: jobsPath + "?watch=1&fieldSelector=spec.x%3Dy", wantCode: 400, wantMsg: "field label not supported: spec.x"},
		"set-based field":         {path: podsPath + "?fieldSelector=" + url.QueryEscape("status.phase in (a)"), wantCode: 400},
		"bad resourceVersion":     {path: podsPath + "?watch=1&resourceVersion=x", wantCode: 400, wantMsg: "invalid resource version"},
		"watch match alone":       {path: podsPath + "?watch=1&resourceVersion=1&resourceVersionMatch=NotOlderThan", wantCode: 422, wantMsg: "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"},
		"initial events exactly":  {path: podsPath + "?watch=1&sendInitialEvents=true&resourceVersionMatch=Exact", wantCode: 422, wantMsg: "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"},
		"initial events no match": {path: podsPath + "?watch=1&sendInitialEvents=true", wantCode: 422},
	}
	ts := newTestServer(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, "GET", tc.path, "")
			if r.code != tc.wantCode || !strings.Contains(statusOf(t, r.body).Message, tc.wantMsg) {
				t.Errorf("got %d %s, want %d %q", r.code, r.body, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

func TestPaginationIsOneSnapshot(t *testing.T) {
	ts := newTestServer(t)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		ts.mustDo(t, "POST", jobsPath, jobJSON(n)) // 1..5
	}
	first := ts.list(t, jobsPath+"?limit=2")
	if first.Metadata.RemainingItemCount == nil || *first.Metadata.RemainingItemCount != 3 {
		t.Errorf("first page remainingItemCount %v, want 3", first.Metadata.RemainingItemCount)
	}
	// Writes between pages are not seen by the later pages.
	ts.mustDo(t, "DELETE", jobsPath+"/c", "")
	ts.mustDo(t, "POST", jobsPath, jobJSON("bb"))
	ts.mustDo(t, "PATCH", jobsPath+"/d", `{"metadata":{"labels":{"x":"y"}}}`, mergePatch)
	second := ts.list(t, jobsPath+"?limit=2&continue="+first.Metadata.Continue)
	if second.Metadata.RemainingItemCount == nil || *second.Metadata.RemainingItemCount != 1 {
		t.Errorf("second page remainingItemCount %v, want 1", second.Metadata.RemainingItemCount)
	}
	third := ts.list(t, jobsPath+"?limit=2&continue="+second.Metadata.Continue)
	var got []string
	for _, page := range []listBody{first, second, third} {
		if page.Metadata.ResourceVersion != "5" {
			t.Errorf("page resourceVersion %q, want the first page's 5", page.Metadata.ResourceVersion)
		}
		got = append(got, page.names()...)
	}
	if diff := cmp.Diff([]string{"a@1", "b@2", "c@3", "d@4", "e@5"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if third.Metadata.Continue != "" || third.Metadata.RemainingItemCount != nil {
		t.Errorf("last page has continue %q, remainingItemCount %v", third.Metadata.Continue, third.Metadata.RemainingItemCount)
	}
	// With a selector, the remaining count is not given.
	sel := ts.list(t, jobsPath+"?limit=1&labelSelector=job-name")
	if sel.Metadata.Continue == "" || sel.Metadata.RemainingItemCount != nil {
		t.Errorf("selective page: continue %q, remainingItemCount %v", sel.Metadata.Continue, sel.Metadata.RemainingItemCount)
	}
}

func TestPaginationAcrossNamespaces(t *testing.T) {
	ts := newTestServer(t)
	// kube orders by "<namespace>/<name>": "a-b/y" before "a/x".
	for _, ns := range []string{"a", "a-b"} {
		if err := ts.store.Create(db.Pods, selectorPod(ns, map[string]string{"a": "x", "a-b": "y"}[ns], nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.store.Create(db.Pods, selectorPod("a", "z", nil, nil)); err != nil {
		t.Fatal(err)
	}
	var got []string
	path := "/api/v1/pods?limit=1"
	for range 5 {
		l := ts.list(t, path)
		got = append(got, l.names()...)
		if l.Metadata.Continue == "" {
			break
		}
		path = "/api/v1/pods?limit=1&continue=" + l.Metadata.Continue
	}
	if diff := cmp.Diff([]string{"y@2", "x@1", "z@3"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestContinueExpired(t *testing.T) {
	ts := newTestServer(t, db.WithChangeLogSize(3))
	for _, n := range []string{"a", "b", "c"} {
		ts.mustDo(t, "POST", jobsPath, jobJSON(n))
	}
	first := ts.list(t, jobsPath+"?limit=1")
	for _, n := range []string{"d", "e", "f", "g"} {
		ts.mustDo(t, "POST", jobsPath, jobJSON(n))
	}
	r := ts.do(t, "GET", jobsPath+"?limit=1&continue="+first.Metadata.Continue, "")
	st := statusOf(t, r.body)
	if r.code != 410 || st.Reason != metav1.StatusReasonExpired || st.Message != msgInconsistentContinue {
		t.Fatalf("got %d %s %q", r.code, st.Reason, st.Message)
	}
	if st.ListMeta.Continue == "" {
		t.Fatal("the 410 carries no continue token")
	}
	// The offered token continues at the newest state.
	rest := ts.list(t, jobsPath+"?continue="+st.ListMeta.Continue)
	if diff := cmp.Diff([]string{"b@2", "c@3", "d@4", "e@5", "f@6", "g@7"}, rest.names()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if rest.Metadata.ResourceVersion != "7" {
		t.Errorf("inconsistent continue listed at %q, want the newest 7", rest.Metadata.ResourceVersion)
	}
}

func TestBadContinueTokens(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	tests := map[string]struct {
		token   string
		query   string
		wantMsg string
	}{
		"not base64":      {token: "!!!", wantMsg: "invalid continue token: continue key is not valid: illegal base64 data"},
		"not JSON":        {token: enc("nope"), wantMsg: "invalid continue token: continue key is not valid: invalid character"},
		"unknown version": {token: enc(`{"v":"x","rv":1,"start":"a\u0000"}`), wantMsg: "server does not recognize this encoded version"},
		"no version":      {token: enc(`{"v":"meta.k8s.io/v1","rv":0,"start":"a\u0000"}`), wantMsg: "incorrect encoded start resourceVersion"},
		"no start":        {token: enc(`{"v":"meta.k8s.io/v1","rv":1,"start":""}`), wantMsg: "encoded start key empty"},
		"climbing out":    {token: enc(`{"v":"meta.k8s.io/v1","rv":1,"start":"../secrets/x"}`), wantMsg: "continue key is not valid"},
		"with a version": {token: enc(`{"v":"meta.k8s.io/v1","rv":1,"start":"a\u0000"}`), query: "&resourceVersion=1",
			wantMsg: "specifying resource version is not allowed when using continue"},
	}
	ts := newTestServer(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, "GET", jobsPath+"?continue="+url.QueryEscape(tc.token)+tc.query, "")
			st := statusOf(t, r.body)
			if r.code != 400 || st.Reason != metav1.StatusReasonBadRequest || !strings.Contains(st.Message, tc.wantMsg) {
				t.Errorf("got %d %s %q, want 400 BadRequest %q", r.code, st.Reason, st.Message, tc.wantMsg)
			}
		})
	}
}
