package kube

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func TestValidateConfigMap(t *testing.T) {
	tests := map[string]struct {
		cm   corev1.ConfigMap
		want string
	}{
		"valid": {cm: corev1.ConfigMap{Data: map[string]string{"game.properties": "x", "UI_MODE": "y"}, BinaryData: map[string][]byte{"logo.png": {0x89}}}},
		"key climbing out": {cm: corev1.ConfigMap{Data: map[string]string{"../x": "v"}},
			want: `[data[../x]: Invalid value: "../x": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+'), data[../x]: Invalid value: "../x": must not start with '..']`},
		"binaryData key": {cm: corev1.ConfigMap{BinaryData: map[string][]byte{"a b": nil}},
			want: `binaryData[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		"key in both bags": {cm: corev1.ConfigMap{Data: map[string]string{"k": "v"}, BinaryData: map[string][]byte{"k": {0}}},
			want: `data[k]: Invalid value: "k": duplicate of key present in binaryData`},
		"both bags together over 1 MiB": {cm: corev1.ConfigMap{Data: map[string]string{"a": strings.Repeat("x", MaxDataSize/2+1)},
			BinaryData: map[string][]byte{"b": make([]byte, MaxDataSize/2)}},
			want: `[]: Too long: may not be more than 1048576 bytes`},
		"exactly 1 MiB": {cm: corev1.ConfigMap{Data: map[string]string{"a": strings.Repeat("x", MaxDataSize)}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := errorsString(ValidateConfigMap(&tc.cm)); got != tc.want {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestValidateConfigMapUpdate(t *testing.T) {
	old := &corev1.ConfigMap{Data: map[string]string{"a": "1"}, Immutable: ptr.To(true)}
	tests := map[string]struct {
		cm   corev1.ConfigMap
		want string
	}{
		"labels only": {cm: corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"x": "y"}},
			Data: map[string]string{"a": "1"}, Immutable: ptr.To(true)}},
		"data": {cm: corev1.ConfigMap{Data: map[string]string{"a": "2"}, Immutable: ptr.To(true)},
			want: "data: Forbidden: field is immutable when `immutable` is set"},
		"binaryData and immutability": {cm: corev1.ConfigMap{Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {0}}},
			want: "[immutable: Forbidden: field is immutable when `immutable` is set, binaryData: Forbidden: field is immutable when `immutable` is set]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := errorsString(ValidateConfigMapUpdate(&tc.cm, old)); got != tc.want {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
		})
	}
	// A mutable ConfigMap may become immutable, and change on the way.
	if errs := ValidateConfigMapUpdate(&corev1.ConfigMap{Data: map[string]string{"a": "2"}, Immutable: ptr.To(true)},
		&corev1.ConfigMap{Data: map[string]string{"a": "1"}}); len(errs) > 0 {
		t.Errorf("a mutable ConfigMap made immutable: %v", errs)
	}
}

func TestPrepareSecret(t *testing.T) {
	s := &corev1.Secret{Data: map[string][]byte{"a": []byte("data"), "b": []byte("kept")},
		StringData: map[string]string{"a": "stringData", "c": "new"}}
	PrepareSecret(s)
	want := &corev1.Secret{Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"a": []byte("stringData"), "b": []byte("kept"), "c": []byte("new")}}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("prepared (-want,+got):\n%s", diff)
	}
	only := &corev1.Secret{Type: corev1.SecretTypeTLS, StringData: map[string]string{"tls.crt": "c"}}
	PrepareSecret(only)
	if only.Type != corev1.SecretTypeTLS || string(only.Data["tls.crt"]) != "c" || only.StringData != nil {
		t.Errorf("stringData alone: %+v", only)
	}
}

func TestValidateSecret(t *testing.T) {
	tests := map[string]struct {
		s    corev1.Secret
		want string
	}{
		"opaque": {s: corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"any.key": nil}}},
		"dockerconfigjson": {s: corev1.Secret{Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{".dockerconfigjson": []byte(`{"auths":{}}`)}}},
		"dockerconfigjson not json, value never echoed": {s: corev1.Secret{Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{".dockerconfigjson": []byte(`hunter2`)}},
			want: `data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'h' looking for beginning of value`},
		"dockercfg missing": {s: corev1.Secret{Type: corev1.SecretTypeDockercfg},
			want: `data[.dockercfg]: Required value`},
		"basic-auth with only a password": {s: corev1.Secret{Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"password": nil}}},
		"basic-auth with neither": {s: corev1.Secret{Type: corev1.SecretTypeBasicAuth},
			want: `[data[username]: Required value, data[password]: Required value]`},
		"ssh-auth with an empty key": {s: corev1.Secret{Type: corev1.SecretTypeSSHAuth, Data: map[string][]byte{"ssh-privatekey": {}}},
			want: `data[ssh-privatekey]: Required value`},
		"tls without key": {s: corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil}},
			want: `data[tls.key]: Required value`},
		"service-account-token names its account": {s: corev1.Secret{Type: corev1.SecretTypeServiceAccountToken,
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"kubernetes.io/service-account.name": "builder"}}}},
		"service-account-token without account": {s: corev1.Secret{Type: corev1.SecretTypeServiceAccountToken},
			want: `metadata.annotations[kubernetes.io/service-account.name]: Required value`},
		"unknown type, free keys": {s: corev1.Secret{Type: "example.com/custom", Data: map[string][]byte{"x": nil}}},
		"over 1 MiB": {s: corev1.Secret{Data: map[string][]byte{"a": make([]byte, MaxDataSize), "b": {1}}},
			want: `data: Too long: may not be more than 1048576 bytes`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := errorsString(ValidateSecret(&tc.s))
			if got != tc.want {
				t.Errorf("got %s\nwant %s", got, tc.want)
			}
			if strings.Contains(got, "hunter2") {
				t.Errorf("an error shows the Secret's value: %s", got)
			}
		})
	}
}

func TestValidateSecretUpdate(t *testing.T) {
	old := &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"a": []byte("1")}, Immutable: ptr.To(true)}
	got := errorsString(ValidateSecretUpdate(&corev1.Secret{Type: corev1.SecretTypeBasicAuth,
		Data: map[string][]byte{"username": []byte("u")}}, old))
	want := "[type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable, immutable: Forbidden: field is immutable when `immutable` is set, data: Forbidden: field is immutable when `immutable` is set]"
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	same := old.DeepCopy()
	same.Labels = map[string]string{"x": "y"}
	if errs := ValidateSecretUpdate(same, old); len(errs) > 0 {
		t.Errorf("a label change of an immutable Secret: %v", errs)
	}
}

func TestSecretWarnings(t *testing.T) {
	if w := SecretWarnings(&corev1.Secret{Type: corev1.SecretTypeOpaque}); w != nil {
		t.Errorf("an Opaque Secret warned %q", w)
	}
	w := SecretWarnings(&corev1.Secret{Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}})
	if want := []string{"tls: failed to find any PEM data in certificate input"}; !cmp.Equal(want, w) {
		t.Errorf("TLS Secret without PEM warned %q, want %q", w, want)
	}
}

// errorsString is errs as kube's message shows them, "" for none.
func errorsString(errs field.ErrorList) string {
	if len(errs) == 0 {
		return ""
	}
	return errs.ToAggregate().Error()
}
