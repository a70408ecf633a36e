package api

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/skiff-sh/skiff/db"
)

// evictionJSON is a policy/v1 Eviction of pod name with deleteOptions
// (a JSON object, or "").
func evictionJSON(name, deleteOptions string) string {
	body := `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `"}`
	if deleteOptions != "" {
		body += `,"deleteOptions":` + deleteOptions
	}
	return body + "}"
}

// evictedCondition is the condition an eviction adds (times ignored).
var evictedCondition = corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
	Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}

func TestEviction(t *testing.T) {
	const path = podsPath + "/p/eviction"
	tracking := []string{"batch.kubernetes.io/job-tracking"}
	tests := map[string]struct {
		phase      corev1.PodPhase
		finalizers []string
		query      string
		body       string
		headers    []string
		wantCode   int
		wantReason metav1.StatusReason
		// what is stored afterwards: gone, or the grace period and conditions.
		wantGone       bool
		wantGrace      *int64 // nil: not being deleted
		wantConditions []corev1.PodCondition
	}{
		"running pod is marked and deleted gracefully": {
			phase: corev1.PodRunning, body: evictionJSON("p", ""), wantCode: 201,
			wantGrace: ptrTo(int64(30)), wantConditions: []corev1.PodCondition{evictedCondition},
		},
		"grace period from deleteOptions": {
			phase: corev1.PodRunning, body: evictionJSON("p", `{"gracePeriodSeconds":5}`), wantCode: 201,
			wantGrace: ptrTo(int64(5)), wantConditions: []corev1.PodCondition{evictedCondition},
		},
		"policy/v1beta1 body": {
			phase: corev1.PodRunning, wantCode: 201,
			body:      `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"p"}}`,
			wantGrace: ptrTo(int64(30)), wantConditions: []corev1.PodCondition{evictedCondition},
		},
		"YAML body": {
			phase: corev1.PodRunning, wantCode: 201, headers: []string{"Content-Type: application/yaml"},
			body:      "apiVersion: policy/v1\nkind: Eviction\nmetadata:\n  name: p\n  namespace: default\n",
			wantGrace: ptrTo(int64(30)), wantConditions: []corev1.PodCondition{evictedCondition},
		},
		"dry run in the query changes nothing": {
			phase: corev1.PodRunning, query: "?dryRun=All", body: evictionJSON("p", ""), wantCode: 201,
		},
		"dry run in deleteOptions changes nothing": {
			phase: corev1.PodRunning, body: evictionJSON("p", `{"dryRun":["All"]}`), wantCode: 201,
		},
		"terminal pod held by a finalizer is marked too": {
			phase: corev1.PodFailed, finalizers: tracking, body: evictionJSON("p", ""), wantCode: 201,
			wantGrace: ptrTo(int64(0)), wantConditions: []corev1.PodCondition{evictedCondition},
		},
		"terminal pod goes at once": {
			phase: corev1.PodSucceeded, body: evictionJSON("p", ""), wantCode: 201, wantGone: true,
		},
		"name mismatch": {
			phase: corev1.PodRunning, body: evictionJSON("q", ""), wantCode: 400, wantReason: metav1.StatusReasonBadRequest,
		},
		"no name": {
			phase: corev1.PodRunning, body: `{"apiVersion":"policy/v1","kind":"Eviction"}`, wantCode: 400,
			wantReason: metav1.StatusReasonBadRequest,
		},
		"namespace mismatch": {
			phase: corev1.PodRunning, wantCode: 400, wantReason: metav1.StatusReasonBadRequest,
			body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p","namespace":"other"}}`,
		},
		"wrong kind": {
			phase: corev1.PodRunning, body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`, wantCode: 400,
			wantReason: metav1.StatusReasonBadRequest,
		},
		"uid precondition fails": {
			phase: corev1.PodRunning, body: evictionJSON("p", `{"preconditions":{"uid":"other"}}`), wantCode: 409,
			wantReason: metav1.StatusReasonConflict,
		},
		"dry runs that differ": {
			phase: corev1.PodRunning, query: "?dryRun=All", body: evictionJSON("p", `{"dryRun":["Other"]}`), wantCode: 500,
			wantReason: metav1.StatusReasonUnknown,
		},
		"GET is not served": {
			phase: corev1.PodRunning, wantCode: 405, wantReason: metav1.StatusReasonMethodNotAllowed,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ts := newTestServer(t)
			pod := selectorPod("default", "p", nil, func(p *corev1.Pod) {
				p.Status.Phase = tc.phase
				p.Finalizers = tc.finalizers
			})
			if err := ts.store.Create(db.Pods, pod); err != nil {
				t.Fatal(err)
			}
			method := "POST"
			if tc.body == "" {
				method = "GET"
			}
			r := ts.do(t, method, path+tc.query, tc.body, tc.headers...)
			var st metav1.Status
			mustJSON(t, r.body, &st)
			if r.code != tc.wantCode || st.Reason != tc.wantReason || st.Kind != "Status" {
				t.Fatalf("got %d %s, want %d reason %q", r.code, r.body, tc.wantCode, tc.wantReason)
			}
			if r.code == 201 {
				want := metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusSuccess, Code: 201}
				if diff := cmp.Diff(want, st); diff != "" {
					t.Errorf("status (-want +got):\n%s", diff)
				}
			}
			stored, err := ts.store.Get(db.Pods, "default", "p")
			if gone := err != nil; gone != tc.wantGone {
				t.Fatalf("gone = %v (%v), want %v", gone, err, tc.wantGone)
			}
			if tc.wantGone {
				return
			}
			got := stored.(*corev1.Pod)
			if diff := cmp.Diff(tc.wantGrace, got.DeletionGracePeriodSeconds); diff != "" {
				t.Errorf("deletion grace period (-want +got):\n%s", diff)
			}
			if (got.DeletionTimestamp != nil) != (tc.wantGrace != nil) {
				t.Errorf("deletionTimestamp %v, want one: %v", got.DeletionTimestamp, tc.wantGrace != nil)
			}
			ignoreTimes := cmpopts.IgnoreFields(corev1.PodCondition{}, "LastTransitionTime")
			if diff := cmp.Diff(tc.wantConditions, got.Status.Conditions, ignoreTimes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEvictionOfMissingPod(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "POST", podsPath+"/p/eviction", evictionJSON("p", ""))
	var st metav1.Status
	mustJSON(t, r.body, &st)
	want := metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
		Code: 404, Reason: metav1.StatusReasonNotFound, Message: `pods "p" not found`,
		Details: &metav1.StatusDetails{Name: "p", Kind: "pods"}}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
}

func TestEvictionFromProtobuf(t *testing.T) {
	ts := newTestServer(t)
	if err := ts.store.Create(db.Pods, selectorPod("default", "p", nil, nil)); err != nil {
		t.Fatal(err)
	}
	grace := int64(2)
	raw, err := (&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r := ts.do(t, "POST", podsPath+"/p/eviction", string(append([]byte("k8s\x00"), envelope...)),
		"Content-Type: application/vnd.kubernetes.protobuf")
	if r.code != 201 {
		t.Fatalf("code %d: %s", r.code, r.body)
	}
	stored, err := ts.store.Get(db.Pods, "default", "p")
	if err != nil {
		t.Fatal(err)
	}
	if g := stored.GetDeletionGracePeriodSeconds(); g == nil || *g != grace {
		t.Errorf("deletion grace period %v, want %d", g, grace)
	}
}

func TestEvictionKeepsTransitionTime(t *testing.T) {
	earlier := metav1.Unix(1000, 0)
	status := corev1.PodStatus{Conditions: []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet", LastTransitionTime: earlier},
	}}
	if !addDisruptionTarget(&status, metav1.Unix(2000, 0)) {
		t.Fatal("changed = false, want true")
	}
	want := []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI",
			Message: "Eviction API: evicting", LastTransitionTime: earlier},
	}
	if diff := cmp.Diff(want, status.Conditions); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if addDisruptionTarget(&status, metav1.Unix(3000, 0)) {
		t.Error("a second eviction changed the condition")
	}
}

func TestEvictionInAggregatedDiscovery(t *testing.T) {
	ts := newTestServer(t)
	var list apidiscoveryv2.APIGroupDiscoveryList
	mustJSON(t, ts.mustDo(t, "GET", "/api", "", "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").body, &list)
	var got *apidiscoveryv2.APISubresourceDiscovery
	for _, res := range list.Items[0].Versions[0].Resources {
		for i, sub := range res.Subresources {
			if res.Resource == "pods" && sub.Subresource == "eviction" {
				got = &res.Subresources[i]
			}
		}
	}
	want := &apidiscoveryv2.APISubresourceDiscovery{Subresource: "eviction",
		ResponseKind: &metav1.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}, Verbs: []string{"create"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pods/eviction (-want +got):\n%s", diff)
	}
}
