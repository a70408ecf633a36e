package api

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	configMapsPath = "/api/v1/namespaces/default/configmaps"
	secretsPath    = "/api/v1/namespaces/default/secrets"
)

func TestSecretStringDataMergedAndDropped(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "POST", secretsPath, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},
		"data":{"a":"`+base64.StdEncoding.EncodeToString([]byte("from-data"))+`","b":"`+base64.StdEncoding.EncodeToString([]byte("kept"))+`"},
		"stringData":{"a":"from-stringData","c":"plain"}}`)
	if r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.body)
	}
	for _, body := range []string{r.body, ts.do(t, "GET", secretsPath+"/s", "").body} {
		var s corev1.Secret
		mustJSON(t, body, &s)
		want := map[string][]byte{"a": []byte("from-stringData"), "b": []byte("kept"), "c": []byte("plain")}
		if diff := cmp.Diff(want, s.Data); diff != "" {
			t.Errorf("data (-want,+got):\n%s", diff)
		}
		if s.StringData != nil || strings.Contains(body, "stringData") || s.Type != corev1.SecretTypeOpaque {
			t.Errorf("stored secret %s: want no stringData and type Opaque", body)
		}
	}
	// A patch with stringData changes data the same way.
	r = ts.do(t, "PATCH", secretsPath+"/s", `{"stringData":{"b":"patched"}}`, "Content-Type: application/merge-patch+json")
	var s corev1.Secret
	mustJSON(t, r.body, &s)
	if r.code != 200 || string(s.Data["b"]) != "patched" || strings.Contains(r.body, "stringData") {
		t.Errorf("patch = %d %s", r.code, r.body)
	}
}

// TestSecretServerSideApplyStringData: kubectl apply --server-side of a
// Secret written with stringData, as kube-apiserver does it: the applier
// owns the stringData keys it sent (managedFields are computed before
// stringData is folded into data), the stored Secret holds only data, a
// key the applier stops sending stays in data (kube can only remove fields
// the live object has), and a ConfigMap or Secret has no
// metadata.generation, as kube's strategies set none.
func TestSecretServerSideApplyStringData(t *testing.T) {
	ts := newTestServer(t)
	apply := func(body string) corev1.Secret {
		t.Helper()
		r := ts.do(t, "PATCH", secretsPath+"/s?fieldManager=kubectl", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n"+body,
			"Content-Type: application/apply-patch+yaml")
		if r.code != 200 && r.code != 201 {
			t.Fatalf("apply %q = %d %s", body, r.code, r.body)
		}
		if strings.Contains(r.body, `"stringData"`) || strings.Contains(r.body, `"generation"`) {
			t.Errorf("apply %q returned stringData or a generation: %s", body, r.body)
		}
		var s corev1.Secret
		mustJSON(t, r.body, &s)
		return s
	}
	s := apply("stringData:\n  a: plain\n")
	if string(s.Data["a"]) != "plain" || len(s.ManagedFields) != 1 || string(s.ManagedFields[0].FieldsV1.Raw) != `{"f:stringData":{"f:a":{}}}` {
		t.Errorf("first apply: data %q, managedFields %+v", s.Data, s.ManagedFields)
	}
	s = apply("stringData:\n  a: changed\n  b: other\n")
	if diff := cmp.Diff(map[string][]byte{"a": []byte("changed"), "b": []byte("other")}, s.Data); diff != "" {
		t.Errorf("second apply data (-want,+got):\n%s", diff)
	}
	s = apply("stringData:\n  b: other\n")
	if _, kept := s.Data["a"]; !kept {
		t.Errorf("a key dropped from stringData left data (kube keeps it): %q", s.Data)
	}
	var got corev1.Secret
	mustJSON(t, ts.do(t, "GET", secretsPath+"/s", "").body, &got)
	if got.Generation != 0 || got.StringData != nil || string(got.Data["b"]) != "other" {
		t.Errorf("stored secret: generation %d, stringData %q, data %q", got.Generation, got.StringData, got.Data)
	}
	r := ts.do(t, "POST", configMapsPath+"?dryRun=All", `{"metadata":{"name":"dry"}}`)
	if r.code != 201 || strings.Contains(r.body, `"generation"`) {
		t.Errorf("dry-run ConfigMap create = %d %s, want no generation", r.code, r.body)
	}
}

func TestSecretValidation(t *testing.T) {
	ts := newTestServer(t)
	cases := map[string]struct {
		body    string
		code    int
		message string
	}{
		"not base64": {`{"metadata":{"name":"x"},"data":{"k":"%%%"}}`, 400,
			`Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 0`},
		"path traversal key": {`{"metadata":{"name":"x"},"stringData":{"../x":"v"}}`, 422,
			`Secret "x" is invalid: [data[../x]: Invalid value: "../x": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+'), data[../x]: Invalid value: "../x": must not start with '..']`},
		"dockerconfigjson without key": {`{"metadata":{"name":"x"},"type":"kubernetes.io/dockerconfigjson","data":{}}`, 422,
			`Secret "x" is invalid: data[.dockerconfigjson]: Required value`},
		"dockerconfigjson not json": {`{"metadata":{"name":"x"},"type":"kubernetes.io/dockerconfigjson","stringData":{".dockerconfigjson":"hunter2"}}`, 422,
			`Secret "x" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'h' looking for beginning of value`},
		"basic-auth empty": {`{"metadata":{"name":"x"},"type":"kubernetes.io/basic-auth"}`, 422,
			`Secret "x" is invalid: [data[username]: Required value, data[password]: Required value]`},
		"ssh-auth": {`{"metadata":{"name":"x"},"type":"kubernetes.io/ssh-auth"}`, 422,
			`Secret "x" is invalid: data[ssh-privatekey]: Required value`},
		"tls": {`{"metadata":{"name":"x"},"type":"kubernetes.io/tls","stringData":{"tls.crt":"c"}}`, 422,
			`Secret "x" is invalid: data[tls.key]: Required value`},
		"service-account-token": {`{"metadata":{"name":"x"},"type":"kubernetes.io/service-account-token"}`, 422,
			`Secret "x" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value`},
		"too big": {`{"metadata":{"name":"x"},"stringData":{"a":"` + strings.Repeat("x", 1<<20) + `","b":"y"}}`, 422,
			`Secret "x" is invalid: data: Too long: may not be more than 1048576 bytes`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := ts.do(t, "POST", secretsPath, tc.body)
			var st metav1.Status
			mustJSON(t, r.body, &st)
			if r.code != tc.code || st.Message != tc.message {
				t.Errorf("create = %d %q, want %d %q", r.code, st.Message, tc.code, tc.message)
			}
			if strings.Contains(r.body, "hunter2") {
				t.Errorf("the answer shows the secret's value: %s", r.body)
			}
		})
	}
}

func TestImmutableConfigMapAndSecret(t *testing.T) {
	ts := newTestServer(t)
	if r := ts.do(t, "POST", configMapsPath, `{"metadata":{"name":"c"},"data":{"a":"1"},"immutable":true}`); r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.body)
	}
	r := ts.do(t, "PUT", configMapsPath+"/c", `{"metadata":{"name":"c"},"data":{"a":"2"},"immutable":true}`)
	var st metav1.Status
	mustJSON(t, r.body, &st)
	if want := "ConfigMap \"c\" is invalid: data: Forbidden: field is immutable when `immutable` is set"; r.code != 422 || st.Message != want {
		t.Errorf("update of data = %d %q, want 422 %q", r.code, st.Message, want)
	}
	// Labels may still change.
	if r := ts.do(t, "PATCH", configMapsPath+"/c", `{"metadata":{"labels":{"a":"b"}}}`, "Content-Type: application/merge-patch+json"); r.code != 200 {
		t.Errorf("label patch = %d %s", r.code, r.body)
	}

	if r := ts.do(t, "POST", secretsPath, `{"metadata":{"name":"s"},"stringData":{"a":"1"},"immutable":true}`); r.code != 201 {
		t.Fatalf("create = %d %s", r.code, r.body)
	}
	r = ts.do(t, "PATCH", secretsPath+"/s", `{"immutable":false,"type":"kubernetes.io/basic-auth"}`, "Content-Type: application/merge-patch+json")
	mustJSON(t, r.body, &st)
	want := "Secret \"s\" is invalid: [type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable, immutable: Forbidden: field is immutable when `immutable` is set, data[username]: Required value, data[password]: Required value]"
	if r.code != 422 || st.Message != want {
		t.Errorf("patch = %d %q, want 422 %q", r.code, st.Message, want)
	}
}

func TestConfigMapValidation(t *testing.T) {
	ts := newTestServer(t)
	r := ts.do(t, "POST", configMapsPath, `{"metadata":{"name":"big"},"data":{"a":"`+strings.Repeat("x", 2<<20-100)+`"}}`)
	var st metav1.Status
	mustJSON(t, r.body, &st)
	if want := `ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes`; r.code != 422 || st.Message != want {
		t.Errorf("2 MiB create = %d %q, want 422 %q", r.code, st.Message, want)
	}
	r = ts.do(t, "POST", configMapsPath, `{"metadata":{"name":"dup"},"data":{"a":"1"},"binaryData":{"a":"AA=="}}`)
	mustJSON(t, r.body, &st)
	if want := `ConfigMap "dup" is invalid: data[a]: Invalid value: "a": duplicate of key present in binaryData`; r.code != 422 || st.Message != want {
		t.Errorf("duplicate key = %d %q, want 422 %q", r.code, st.Message, want)
	}
}

func TestConfigMapAndSecretTables(t *testing.T) {
	ts := newTestServer(t)
	ts.do(t, "POST", configMapsPath, `{"metadata":{"name":"c"},"data":{"a":"1","b":"2"},"binaryData":{"c":"AA=="}}`)
	ts.do(t, "POST", secretsPath, `{"metadata":{"name":"s"},"type":"kubernetes.io/basic-auth","stringData":{"username":"u","password":"p"}}`)
	const accept = "Accept: application/json;as=Table;v=v1;g=meta.k8s.io"
	for path, want := range map[string][]any{
		configMapsPath: {"c", float64(3)},
		secretsPath:    {"s", "kubernetes.io/basic-auth", float64(2)},
	} {
		var tbl metav1.Table
		mustJSON(t, ts.do(t, "GET", path, "", accept).body, &tbl)
		if len(tbl.Rows) != 1 {
			t.Fatalf("%s: %d rows", path, len(tbl.Rows))
		}
		if diff := cmp.Diff(want, tbl.Rows[0].Cells[:len(want)]); diff != "" {
			t.Errorf("%s cells (-want,+got):\n%s", path, diff)
		}
	}
	// Secrets select on their type.
	r := ts.do(t, "GET", secretsPath+"?fieldSelector=type%3DOpaque", "")
	var l corev1.SecretList
	mustJSON(t, r.body, &l)
	if r.code != 200 || len(l.Items) != 0 {
		t.Errorf("type=Opaque list = %d %s", r.code, r.body)
	}
}

func TestSecretFromProtobuf(t *testing.T) {
	ts := newTestServer(t)
	raw, err := (&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pb"}, StringData: map[string]string{"k": "v"},
		Data: map[string][]byte{"bin": {0, 0xff}}}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Secret"}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r := ts.do(t, "POST", secretsPath, string(append([]byte("k8s\x00"), envelope...)), "Content-Type: application/vnd.kubernetes.protobuf")
	var s corev1.Secret
	mustJSON(t, r.body, &s)
	if r.code != 201 || string(s.Data["k"]) != "v" || string(s.Data["bin"]) != "\x00\xff" {
		t.Errorf("protobuf create = %d %s", r.code, r.body)
	}
}

func TestConfigMapSelectorsAndDeleteCollection(t *testing.T) {
	ts := newTestServer(t)
	for _, name := range []string{"a", "b", "c"} {
		app := "web"
		if name == "c" {
			app = "db"
		}
		ts.do(t, "POST", configMapsPath, `{"metadata":{"name":"`+name+`","labels":{"app":"`+app+`"}}}`)
	}
	var l corev1.ConfigMapList
	mustJSON(t, ts.do(t, "GET", configMapsPath+"?labelSelector=app%3Dweb", "").body, &l)
	if len(l.Items) != 2 {
		t.Errorf("app=web lists %d ConfigMaps, want 2", len(l.Items))
	}
	if r := ts.do(t, "DELETE", configMapsPath+"?labelSelector=app%3Dweb", ""); r.code != 200 {
		t.Fatalf("deletecollection = %d %s", r.code, r.body)
	}
	mustJSON(t, ts.do(t, "GET", configMapsPath, "").body, &l)
	if len(l.Items) != 1 || l.Items[0].Name != "c" {
		t.Errorf("left after deletecollection: %+v", l.Items)
	}
}
