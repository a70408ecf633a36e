package api

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/skiff-sh/skiff/db"
	"github.com/skiff-sh/skiff/serviceaccount"
)

// newTokenServer is a test server issuing tokens, and the authenticator
// of its tokens.
func newTokenServer(t *testing.T) (*testServer, *serviceaccount.Authenticator) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := serviceaccount.NewIssuer(serviceaccount.DefaultIssuer, key)
	if err != nil {
		t.Fatal(err)
	}
	req := &serviceaccount.Requester{Issuer: issuer, Audiences: []string{serviceaccount.DefaultIssuer}}
	ts := newTestServerWith(t, Config{Tokens: req})
	get := serviceaccount.StoreGetter{Store: ts.store}
	req.Get, req.Node = get, get.Node
	a, err := serviceaccount.NewAuthenticator(serviceaccount.DefaultIssuer, []crypto.PublicKey{key.Public()}, req.Audiences, get)
	if err != nil {
		t.Fatal(err)
	}
	return ts, a
}

func TestServiceAccountTable(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "POST", "/api/v1/namespaces/default/serviceaccounts",
		`{"metadata":{"name":"runner"},"secrets":[{"name":"s1","namespace":"x","uid":"u"}]}`)
	if r.code != 201 || !strings.Contains(r.body, `"secrets":[{"name":"s1"}]`) {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	r = ts.do(t, "GET", "/api/v1/namespaces/default/serviceaccounts/runner", "", "Accept: application/json;as=Table;v=v1;g=meta.k8s.io")
	var tbl metav1.Table
	if err := json.Unmarshal([]byte(r.body), &tbl); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Name,Secrets,Age" || len(tbl.Rows) != 1 || tbl.Rows[0].Cells[1] != float64(1) {
		t.Errorf("table: %s", r.body)
	}
	r = ts.do(t, "POST", "/api/v1/namespaces/default/serviceaccounts",
		`{"metadata":{"name":"old","annotations":{"kubernetes.io/enforce-mountable-secrets":"true"}}}`)
	if !strings.Contains(r.header.Get("Warning"), "deprecated in v1.32+") {
		t.Errorf("no deprecation warning: %v", r.header)
	}
}

func TestTokenRequest(t *testing.T) {
	ts, authn := newTokenServer(t)
	mustCreate := func(r db.Resource, obj db.Object) db.Object {
		t.Helper()
		if err := ts.store.Create(r, obj); err != nil {
			t.Fatal(err)
		}
		got, err := ts.store.Get(r, obj.GetNamespace(), obj.GetName())
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	mustCreate(db.ServiceAccounts, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default"}})
	pod := mustCreate(db.Pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p"},
		Spec: corev1.PodSpec{ServiceAccountName: "default", NodeName: "node-a"}})
	mustCreate(db.Pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "other"},
		Spec: corev1.PodSpec{ServiceAccountName: "builder"}})
	const path = "/api/v1/namespaces/default/serviceaccounts/default/token"
	tests := map[string]struct {
		path, body string
		wantCode   int
		wantMsg    string
		wantLife   time.Duration // of the status; the JWT's when wantJWT is set
		wantJWT    time.Duration
	}{
		"defaults": {body: `{}`, wantCode: 201, wantLife: time.Hour, wantJWT: time.Hour},
		"kubectl": {body: `{"kind":"TokenRequest","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":null},"spec":{"audiences":null,"expirationSeconds":null,"boundObjectRef":null},"status":{"token":"","expirationTimestamp":null}}`,
			wantCode: 201, wantLife: time.Hour, wantJWT: time.Hour},
		"pod-bound warn-only": {body: `{"spec":{"expirationSeconds":3607,"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p","uid":"` + string(pod.GetUID()) + `"}}}`,
			wantCode: 201, wantLife: 3607 * time.Second, wantJWT: serviceaccount.ExtendedExpiration},
		"unbound 3607 is not extended": {body: `{"spec":{"expirationSeconds":3607}}`, wantCode: 201, wantLife: 3607 * time.Second, wantJWT: 3607 * time.Second},
		"missing account": {path: "/api/v1/namespaces/default/serviceaccounts/nope/token", body: `{}`, wantCode: 404,
			wantMsg: `serviceaccounts \"nope\" not found`},
		"too short": {body: `{"spec":{"expirationSeconds":599}}`, wantCode: 422,
			wantMsg: `TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes`},
		"too long":   {body: `{"spec":{"expirationSeconds":4294967297}}`, wantCode: 422, wantMsg: "may not specify a duration larger than 2^32 seconds"},
		"other name": {body: `{"metadata":{"name":"x"}}`, wantCode: 422, wantMsg: `metadata.name: Invalid value: \"x\": must match the service account name if specified`},
		"node binding": {body: `{"spec":{"boundObjectRef":{"kind":"Node","apiVersion":"v1","name":"node-a"}}}`, wantCode: 400,
			wantMsg: "cannot bind token to object of type /v1, Kind=Node"},
		"another account's pod": {body: `{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"other"}}}`, wantCode: 400,
			wantMsg: `cannot bind token for serviceaccount \"default\" to pod running with different serviceaccount name.`},
		"stale pod uid": {body: `{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p","uid":"gone"}}}`, wantCode: 409,
			wantMsg: "the UID in the bound object reference (gone) does not match the UID in record"},
		"wrong kind": {body: `{"kind":"Pod","apiVersion":"v1"}`, wantCode: 400, wantMsg: "does not match the expected API version"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := tc.path
			if p == "" {
				p = path
			}
			r := ts.do(t, "POST", p, tc.body)
			if r.code != tc.wantCode || !strings.Contains(r.body, tc.wantMsg) {
				t.Fatalf("%d %s, want %d with %q", r.code, r.body, tc.wantCode, tc.wantMsg)
			}
			if tc.wantCode != 201 {
				return
			}
			var tr authenticationv1.TokenRequest
			if err := json.Unmarshal([]byte(r.body), &tr); err != nil {
				t.Fatal(err)
			}
			if tr.Kind != "TokenRequest" || tr.APIVersion != "authentication.k8s.io/v1" || tr.Name != "default" {
				t.Errorf("answer: %s", r.body)
			}
			if life := tr.Status.ExpirationTimestamp.Sub(tr.CreationTimestamp.Time); life < tc.wantLife-time.Second || life > tc.wantLife+time.Second {
				t.Errorf("status lifetime %v, want %v", life, tc.wantLife)
			}
			c, ok, err := authn.Verify(tr.Status.Token)
			if !ok || err != nil {
				t.Fatalf("token: ok %v err %v", ok, err)
			}
			if life := c.Expiry.Time().Sub(c.IssuedAt.Time()); life != tc.wantJWT {
				t.Errorf("token lifetime %v, want %v", life, tc.wantJWT)
			}
		})
	}
}

func TestServiceAccountOpenAPI(t *testing.T) {
	ts := newTestServer(t)
	for path, want := range map[string]string{
		"/openapi/v3/api/v1": `"io.k8s.api.core.v1.ServiceAccount"`,
		"/openapi/v2":        `"io.k8s.api.core.v1.ServiceAccount"`,
	} {
		r := ts.do(t, "GET", path, "")
		if r.code != 200 || !strings.Contains(r.body, want) || !strings.Contains(r.body, "/api/v1/namespaces/{namespace}/serviceaccounts/{name}") {
			t.Errorf("%s: %d, no ServiceAccount schema or path", path, r.code)
		}
	}
}
